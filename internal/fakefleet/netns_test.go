package fakefleet

import (
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// The body runs in the child alone, where the namespace holds its decoys and reaches the test
// binary's database server through the parent's proxy (signing in as the server's URL says, over
// TCP: the server's rules for its socket do not apply).
func TestANamespacesBodyHasItsDecoysAndTheDatabase(t *testing.T) {
	t.Parallel()
	ran := false
	InNetworkNamespace(t, Namespace{Decoys: []string{"169.254.169.254:80"}, Database: true}, func(t *testing.T, decoys *Decoys) {
		ran = true
		pool := dbtest.Pool(t, dbtest.NewEmptyDB(t))
		var addr *string
		require.NoError(t, pool.QueryRow(t.Context(), "SELECT inet_client_addr()::text").Scan(&addr))
		require.NotNil(t, addr, "the server saw a TCP connection, not one on its own socket")
		require.Zero(t, decoys.Connections(t))
		c, err := net.Dial("tcp", "169.254.169.254:80") // the decoy on the namespace's loopback
		require.NoError(t, err)
		require.NoError(t, c.Close())
		require.Equal(t, 1, decoys.Connections(t))
	})
	if os.Getenv(netnsChildEnv) == "" {
		require.False(t, ran, "the body runs only in the child")
	}
}

// The subject of the tests below: a body with nothing in it to send, so that it can run
// anywhere when they start it without a namespace.
func TestAnEmptyBodyInANamespace(t *testing.T) {
	t.Parallel()
	InNetworkNamespace(t, Namespace{}, func(t *testing.T, _ *Decoys) { t.Log("in a network namespace of its own") })
}

// A child started outside a network namespace of its own (by hand, or by an unshare that did
// nothing) fails before its body runs, whether it is told its parent's namespace or not; so does
// one in a namespace of its own that holds more than loopback.
func TestABodyOutsideANamespaceOfItsOwnDoesNotRun(t *testing.T) {
	t.Parallel()
	own, err := os.Readlink(ownNetNS)
	require.NoError(t, err)
	child := []string{os.Args[0], "-test.run=^TestAnEmptyBodyInANamespace$", "-test.count=1", "-test.v"}
	for _, tc := range []struct {
		name string
		env  []string
		run  []string
		want string
	}{
		{"told its parent's namespace", []string{netnsParentEnv + "=" + own}, child, "is not in a network namespace of its own (net:"},
		{"told none", nil, child, "is not in a network namespace of its own (net:"},
		{"with another interface", []string{netnsParentEnv + "=" + own}, nil, "not loopback alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.run == nil {
				unshare, why := unshareCommand()
				if why != "" {
					notRun(t, "makes a network namespace, and "+why)
				}
				tc.run = slices.Concat(unshare, []string{"sh", "-ec", `ip link add probe0 type veth peer name probe1 && exec "$0" "$@"`}, child)
			}
			cmd := exec.CommandContext(t.Context(), tc.run[0], tc.run[1:]...)
			cmd.Env = slices.Concat(os.Environ(), []string{netnsChildEnv + "=TestAnEmptyBodyInANamespace"}, tc.env)
			out, err := cmd.CombinedOutput()
			if !strings.Contains(string(out), "=== RUN") { // the script failed before the test binary ran
				t.Skipf("no veth interface can be made here: %s", out)
			}
			require.Error(t, err, "%s", out)
			require.Contains(t, string(out), tc.want, "%s", out)
			require.NotContains(t, string(out), "in a network namespace of its own\n", "the body did not run")
		})
	}
}

// Root without CAP_SYS_ADMIN (a container's root, commonly) cannot make a network namespace
// directly, and makes one as root of a user namespace of its own instead.
func TestRootWithoutCapSysAdminStillMakesANamespace(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsChildEnv) != "" {
		t.Skip("started by the tests above")
	}
	if os.Geteuid() != 0 {
		t.Skip("for root: any other user makes a user namespace first already")
	}
	if _, why := unshareCommand(); why != "" {
		notRun(t, "needs a network namespace to compare with, and "+why)
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skipf("needs setpriv (util-linux) to drop CAP_SYS_ADMIN: %v", err)
	}
	drop := []string{"--inh-caps=-sys_admin", "--bounding-set=-sys_admin"}
	if out, err := exec.Command("setpriv", append(drop, "unshare", "--user", "--map-root-user", "--net", "true")...).CombinedOutput(); err != nil {
		t.Skipf("this machine allows no user namespaces: %v: %s", err, out)
	}
	cmd := exec.CommandContext(t.Context(), "setpriv", append(drop, os.Args[0],
		"-test.run=^TestAnEmptyBodyInANamespace$", "-test.count=1", "-test.v")...)
	cmd.Env = append(os.Environ(), "PROBECTL_REQUIRE_NETNS=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "--- PASS: TestAnEmptyBodyInANamespace ")
	require.Contains(t, string(out), "made by `unshare --user --map-root-user --net`")
}
