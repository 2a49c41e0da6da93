package check

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRefusalJudgesAURLAsTheGuardWouldWithoutSendingAnything(t *testing.T) {
	t.Parallel()
	c := New(Config{})
	c.lookup = func(ctx context.Context, network, host string) ([]netip.Addr, error) {
		switch host {
		case "inside.example":
			return []netip.Addr{netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("10.1.2.3")}, nil
		case "outside.example":
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
		}
		return nil, errors.New("no such host")
	}
	cases := []struct{ url, want string }{
		{"http://127.0.0.1:8080/mcp", "refused: 127.0.0.1 is a loopback address; private targets are not allowed"},
		{"https://[fe80::1]/", "link-local"},
		{"https://inside.example/mcp", "refused: inside.example resolves to 10.1.2.3"},
		{"https://outside.example/mcp", ""},
		{"https://unknown.example/", ""},
		{"::not a url", ""},
	}
	for _, tc := range cases {
		r := c.Refusal(context.Background(), tc.url)
		if tc.want == "" {
			assert.Nil(t, r, tc.url)
			continue
		}
		require.NotNil(t, r, tc.url)
		assert.Contains(t, r.Error(), tc.want, tc.url)
	}

	allowed := New(Config{AllowPrivate: true})
	assert.Nil(t, allowed.Refusal(context.Background(), "http://127.0.0.1:8080/"))
	r := allowed.Refusal(context.Background(), "http://169.254.169.254/latest/meta-data/")
	require.NotNil(t, r, "metadata addresses stay refused")
}
