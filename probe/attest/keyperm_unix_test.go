//go:build unix

package attest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keypermChild is set in the environment of the test binary run again as another user: it then
// only loads the key it names and says "loaded" or why not.
const keypermChild = "PROBECTL_TEST_KEYPERM_LOAD"

func TestMain(m *testing.M) {
	if path := os.Getenv(keypermChild); path != "" {
		if _, err := LoadSigner(path); err != nil {
			os.Stdout.WriteString("refused: " + err.Error())
		} else {
			os.Stdout.WriteString("loaded")
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A key its group may read is accepted only as the kubelet gives a secret to a pod: root's, 0440,
// its group the process's own effective group, in a secret volume (a "..data" symlink beside the
// path). On a shared host a root:users 0440 key, or a key of a supplementary group, is refused.
// The loader runs as a user that is not root, with the groups a pod would have.
func TestAGroupReadableKeyIsAcceptedOnlyAsAPodSecret(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to chown the key to root:group and run the loader as another user")
	}
	const uid, gid, other = 65532, 65532, 65533
	_, priv, err := GenerateKey()
	require.NoError(t, err)
	src := filepath.Join(t.TempDir(), "k")
	require.NoError(t, WritePrivateKey(src, priv))
	pem, err := os.ReadFile(src)
	require.NoError(t, err)

	root := t.TempDir()
	for p := root; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		require.NoError(t, os.Chmod(p, 0o755))
	}
	// The test binary, where the other user may run it.
	exe, err := os.Executable()
	require.NoError(t, err)
	bin := filepath.Join(root, "attest.test")
	copyFile(t, exe, bin, 0o755)

	// secret writes the key as the kubelet does (dir/..2026.../key, ..data -> it, dir/key ->
	// ..data/key) or, without kubelet, as a plain file; root's, group g, 0440.
	secret := func(name string, g int, kubelet bool) string {
		dir := filepath.Join(root, name)
		require.NoError(t, os.Mkdir(dir, 0o755))
		file := filepath.Join(dir, "signing.key")
		if kubelet {
			stamp := filepath.Join(dir, "..2026_12_01_00_00_00.000000001")
			require.NoError(t, os.Mkdir(stamp, 0o755))
			file = filepath.Join(stamp, "signing.key")
			require.NoError(t, os.Symlink(filepath.Base(stamp), filepath.Join(dir, "..data")))
			require.NoError(t, os.Symlink(filepath.Join("..data", "signing.key"), filepath.Join(dir, "signing.key")))
		}
		require.NoError(t, os.WriteFile(file, pem, 0o440))
		require.NoError(t, os.Chmod(file, 0o440))
		require.NoError(t, os.Chown(file, 0, g))
		return filepath.Join(dir, "signing.key")
	}
	load := func(path string) string {
		t.Helper()
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = []string{keypermChild + "=" + path}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
			Uid: uid, Gid: gid, Groups: []uint32{gid, other}}}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		return string(out)
	}

	assert.Equal(t, "loaded", load(secret("pod", gid, true)), "the kubelet's secret under the pod's own group")
	refused := load(secret("shared", gid, false))
	assert.True(t, strings.HasPrefix(refused, "refused:"), "root:group 0440 outside a secret volume: %s", refused)
	refused = load(secret("supplementary", other, true))
	assert.True(t, strings.HasPrefix(refused, "refused:"), "a supplementary group's key: %s", refused)
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}
