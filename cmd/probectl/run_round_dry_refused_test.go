package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/fakefleet"
	"github.com/probectl/probectl/internal/testfactory"
)

// The dry run's headline suggests --allow-private-targets only for refusals it would lift: a cloud
// metadata or link-local address is refused whatever the flags. Address literals: nothing is
// resolved, and a dry run sends nothing. The command builds its own dialer, so the test runs in a
// network namespace of its own, where the metadata address is a decoy on loopback: had the dry run
// sent anything there, it would have reached the decoy, never the real endpoint.
func TestTheDryRunSuggestsAllowPrivateTargetsOnlyWhenItWouldLiftARefusal(t *testing.T) {
	t.Parallel()
	// No decoy for [fe80::1]: a link-local address needs a zone to be listened on (bind refuses
	// it without one), and without a zone it is not routed off the host either.
	ns := fakefleet.Namespace{Decoys: []string{"169.254.169.254:80"}, Database: true}
	fakefleet.InNetworkNamespace(t, ns, func(t *testing.T, decoys *fakefleet.Decoys) {
		ctx := context.Background()
		url, pool := migratedDB(t)
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "metadata", URL: "http://169.254.169.254/latest/meta-data/"})
		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "link-local", URL: "http://[fe80::1]/"})

		res := runCLI(t, "--database-url", url, "run", "round", "--dry-run", "--fanout", "0")
		require.Equal(t, 0, res.Code, res.Stderr)
		assert.Contains(t, res.Stdout, "2 claimable server(s) the SSRF guard will refuse: their checks fail without a request "+
			"(cloud metadata or link-local addresses: no flag allows them)\n")
		assert.NotContains(t, res.Stdout, "--allow-private-targets")

		testfactory.Server(ctx, t, pool, &testfactory.ServerOpts{Slug: "loopback", URL: "http://127.0.0.1:1/"})
		res = runCLI(t, "--database-url", url, "run", "round", "--dry-run", "--fanout", "0")
		require.Equal(t, 0, res.Code, res.Stderr)
		assert.Contains(t, res.Stdout, "3 claimable server(s) the SSRF guard will refuse: their checks fail without a request "+
			"(--allow-private-targets would allow 1 of them, a test fleet on a private network; no flag allows the other 2: "+
			"cloud metadata or link-local addresses)\n")

		res = runCLI(t, "--database-url", url, "run", "round", "--dry-run", "--fanout", "0", "--allow-private-targets")
		require.Equal(t, 0, res.Code, res.Stderr)
		assert.Contains(t, res.Stdout, "2 claimable server(s) the SSRF guard will refuse: their checks fail without a request "+
			"(cloud metadata or link-local addresses: no flag allows them)\n", "the flag given, what it lifts is not refused")
		require.Zero(t, decoys.Connections(t), "a dry run sends nothing")
	})
}
