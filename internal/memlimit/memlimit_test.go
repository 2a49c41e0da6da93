package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTheLimitIsAShareOfTheContainersAndNoneWhenItHasNone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		want          int64
		ok            bool
	}{
		{"cgroup v2, 256Mi", "268435456\n", 228170137, true},
		{"cgroup v2, no limit", "max\n", 0, false},
		{"cgroup v1, no limit", "9223372036854771712\n", 0, false},
		{"garbage", "lots\n", 0, false},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, ok := fromCgroup(path)
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
	_, ok := fromCgroup(filepath.Join(dir, "absent"))
	assert.False(t, ok)
}

// GOMEMLIMIT=off is an operator's choice of no limit: the container's limit must not replace it.
func TestGOMEMLIMITOffIsLeftAsItIs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "memory.max")
	if err := os.WriteFile(path, []byte("268435456\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	saved := cgroupFiles
	cgroupFiles = []string{path}
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { cgroupFiles = saved; debug.SetMemoryLimit(before) })
	t.Setenv("GOMEMLIMIT", "off")

	_, source := Set()
	assert.Equal(t, "GOMEMLIMIT", source)
	assert.Equal(t, before, debug.SetMemoryLimit(-1), "the runtime's limit was changed")
}
