package directory

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValidateRefusesAURLLongerThanTheLimitWithoutQuotingIt(t *testing.T) {
	t.Parallel()
	base := "https://a.example/?q="
	atLimit := Entry{Slug: "a", URL: base + strings.Repeat("x", MaxURLBytes-len(base)), Kind: "http"}
	require.NoError(t, atLimit.Validate(), "a URL of exactly the limit is accepted")

	over := Entry{Slug: "a", URL: atLimit.URL + "x", Kind: "http"}
	err := over.Validate()
	require.EqualError(t, err, "url: 2049 bytes, longer than the 2048-byte limit")
}

func TestValidateNeverPrintsUserInfoOfAURLThatDoesNotParse(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"https://alice:S3cretPass@exa mple.com/",
		"https://alice:S3cretPass@[::1/",
		"https://alice:S3cretPass@a.example/%zz",
		"alice:S3cretPass@a.example/%zz",
		"https://alice:S3cret/Pass@a.example:x/",
	} {
		t.Run(raw, func(t *testing.T) {
			t.Parallel()
			e := Entry{Slug: "a", URL: raw, Kind: "http"}
			err := e.Validate()
			require.Error(t, err)
			require.NotContains(t, err.Error(), "S3cret")
			require.NotContains(t, err.Error(), "Pass@")
		})
	}
}
