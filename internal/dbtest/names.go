package dbtest

import (
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
)

// maxTemplateName leaves room for the process token within PostgreSQL's
// 63-byte identifiers.
const maxTemplateName = 40

var templateNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// dbSeq numbers this process's databases, so names never repeat.
var dbSeq atomic.Uint64

// testDBName names a test's database after the test, so a leftover one is
// easy to trace, and makes it unique on a server shared by many binaries.
func testDBName(testName string) string {
	const maxSlug = 24
	var b strings.Builder
	for _, r := range strings.ToLower(testName) {
		if b.Len() == maxSlug {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return fmt.Sprintf("t_%s_%s_%d", b.String(), processToken(), dbSeq.Add(1))
}

func templateDBName(name string) string {
	return name + "_" + processToken()
}

func validTemplateName(name string) bool {
	return len(name) <= maxTemplateName && templateNameRE.MatchString(name)
}
