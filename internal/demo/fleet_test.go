package demo

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/probe/check"
)

func TestTheFleetHasAFewOfEachAwkwardKindAndAnEighthMCPServers(t *testing.T) {
	t.Parallel()
	f, err := StartFleet(DefaultServers)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })

	require.Len(t, f.Servers, DefaultServers)
	require.Equal(t, FleetCounts{HTTP: 262, MCP: 38, Slow: 4, Hanging: 2, Failing: 6, Oversized: 3}, f.Counts())
	rows, err := f.Rows()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, r := range rows {
		require.False(t, seen[r.Slug], "slug %s twice", r.Slug)
		seen[r.Slug] = true
		require.Equal(t, "standard", r.Plan)
		require.Contains(t, r.URL, "http://127.0.0.1:")
	}
	// The awkward servers are spread over the directory, not bunched into one round.
	first := map[Behaviour]int{}
	for i, s := range f.Servers {
		if _, ok := first[s.Behaviour]; !ok {
			first[s.Behaviour] = i
		}
	}
	require.Less(t, first[Failing], 100)
}

// one returns the first server of the fleet with that kind and behaviour.
func one(t *testing.T, f *Fleet, kind string, b Behaviour) FleetServer {
	t.Helper()
	for _, s := range f.Servers {
		if s.Kind == kind && s.Behaviour == b {
			return s
		}
	}
	t.Fatalf("no %s server that is %s", kind, b)
	return FleetServer{}
}

func TestEachServerOfTheFleetAnswersTheRealCheckerAsItsBehaviourSays(t *testing.T) {
	t.Parallel()
	f, err := StartFleet(60)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	checker := check.New(check.Config{AllowPrivate: true, RequestTimeout: RequestTimeout})

	cases := []struct {
		name, kind string
		b          Behaviour
		outcome    string
		summary    string
	}{
		{"a healthy http server answers 200", "http", Healthy, check.OutcomeOK, "HTTP 200"},
		{"a healthy MCP server lists its tools", "mcp", Healthy, check.OutcomeOK, "tools from mcp-"},
		{"a slow server answers within the request timeout", "http", Slow, check.OutcomeOK, "HTTP 200"},
		{"a failing server answers 503", "http", Failing, check.OutcomeFailed, "HTTP 503"},
		{"a failing MCP server fails its initialize", "mcp", Failing, check.OutcomeFailed, "initialize failed"},
		{"an oversized server is cut off at the cap", "http", Oversized, check.OutcomeFailed, "response too large"},
		{"a server that never answers times out", "http", Hanging, check.OutcomeError, "timed out"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := one(t, f, tc.kind, tc.b)
			res := checker.Check(context.Background(), check.Target{Slug: s.Slug, URL: s.URL, Kind: s.Kind})
			assert.Equal(t, tc.outcome, res.Outcome, res.Error)
			assert.Contains(t, res.Summary, tc.summary)
			assert.LessOrEqual(t, len(res.Requests), check.MaxRequests)
			assert.Positive(t, f.Hits(s.Slug))
		})
	}
}

func TestWaitForHitReturnsWhenTheServerIsCheckedAgainOrTheTimeoutPasses(t *testing.T) {
	t.Parallel()
	f, err := StartFleet(20)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	s := one(t, f, "http", Healthy)
	checker := check.New(check.Config{AllowPrivate: true})

	require.False(t, f.WaitForHit(t.Context(), s.Slug, 0, 10*time.Millisecond), "nobody checked it")
	done := make(chan bool)
	go func() { done <- f.WaitForHit(context.Background(), s.Slug, 0, time.Minute) }()
	checker.Check(context.Background(), check.Target{URL: s.URL, Kind: s.Kind})
	require.True(t, <-done)
	require.Equal(t, 1, f.Hits(s.Slug))
}
