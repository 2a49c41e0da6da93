package worker_test

import (
	"crypto/ed25519"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/queries"
)

// kubelet stands for what Kubernetes does to a pod's volumes under the manifest's
// securityContext, after the kubelet's SetVolumeOwnership: every file and directory is given the
// group fsGroup and its mode is or-ed with group read (and write, unless the volume is
// read-only, as secret volumes are), directories also with group search and set-group-id.
type kubelet struct {
	fsGroup int
}

func (k kubelet) own(t *testing.T, path string, readOnly bool) {
	t.Helper()
	info, err := os.Lstat(path)
	require.NoError(t, err)
	if info.Mode()&os.ModeSymlink != 0 {
		return
	}
	require.NoError(t, os.Lchown(path, -1, k.fsGroup))
	mask := os.FileMode(0o660)
	if readOnly {
		mask = 0o440
	}
	mode := info.Mode().Perm() | mask
	if info.IsDir() {
		mode |= os.ModeSetgid | 0o110
	}
	require.NoError(t, os.Chmod(path, mode))
}

// ownAll applies own to a whole tree, as the kubelet does at every mount unless
// fsGroupChangePolicy is OnRootMismatch and the volume's root already has fsGroup.
func (k kubelet) ownAll(t *testing.T, root string, readOnly bool) {
	t.Helper()
	require.NoError(t, filepath.Walk(root, func(path string, _ os.FileInfo, err error) error {
		require.NoError(t, err)
		k.own(t, path, readOnly)
		return nil
	}))
}

// secretVolume writes a secret's one file as the kubelet does: root's, in a timestamped
// directory reached through the ..data link, with the item's mode, then owned for fsGroup.
func (k kubelet) secretVolume(t *testing.T, dir, name string, data []byte, mode os.FileMode) string {
	t.Helper()
	stamp := filepath.Join(dir, "..2026_12_01_00_00_00.000000001")
	require.NoError(t, os.MkdirAll(stamp, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stamp, name), data, mode))
	require.NoError(t, os.Chmod(filepath.Join(stamp, name), mode))
	require.NoError(t, os.Symlink(filepath.Base(stamp), filepath.Join(dir, "..data")))
	require.NoError(t, os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)))
	k.ownAll(t, dir, true)
	return filepath.Join(dir, name)
}

// podSpec is what the test reads of the manifest's pod beyond manifest: the policy, the volumes
// and the container's mounts and environment.
type podSpec struct {
	Spec struct {
		Template struct {
			Spec struct {
				SecurityContext struct {
					FSGroupChangePolicy string `yaml:"fsGroupChangePolicy"`
				} `yaml:"securityContext"`
				Containers []struct {
					Env []struct {
						Name  string `yaml:"name"`
						Value string `yaml:"value"`
					} `yaml:"env"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
				Volumes []struct {
					Name   string `yaml:"name"`
					Secret *struct {
						DefaultMode *int `yaml:"defaultMode"`
						Items       []struct {
							Path string `yaml:"path"`
							Mode *int   `yaml:"mode"`
						} `yaml:"items"`
					} `yaml:"secret"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// The manifest's worker accepts the spool and the key file Kubernetes gives it: the worker runs
// as the manifest's user with fsGroup as a supplementary group, the secret is written and owned
// as the kubelet does (root's, group fsGroup, the item's mode or-ed with 0440, behind ..data
// links), the spool volume's root is root's with group fsGroup, and after a restart (the kubelet
// owns the volume again, as its fsGroupChangePolicy says) the worker still accepts its spool.
func TestTheKubernetesManifestsWorkerAcceptsTheSpoolAndKeyKubernetesGivesIt(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to make files as the kubelet does and to run the worker as the manifest's user")
	}
	m := readManifest(t)
	sc := m.Spec.Template.Spec.SecurityContext
	require.NotNil(t, sc.RunAsUser, "the manifest names its user")
	require.NotNil(t, sc.FSGroup, "the manifest names its fsGroup")
	gid := sc.FSGroup
	if sc.RunAsGroup != nil {
		gid = sc.RunAsGroup
	}
	raw, err := os.ReadFile("../../deploy/kubernetes/worker.yaml")
	require.NoError(t, err)
	var pod podSpec
	require.NoError(t, yaml.Unmarshal(raw, &pod))
	ps := pod.Spec.Template.Spec
	k := kubelet{fsGroup: int(*sc.FSGroup)}

	// The pod's root: a directory everyone may traverse, as a container's file system is.
	root := t.TempDir()
	for p := root; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		require.NoError(t, os.Chmod(p, 0o755))
	}
	mounts := map[string]string{}
	for _, vm := range ps.Containers[0].VolumeMounts {
		mounts[vm.Name] = vm.MountPath
	}
	env := map[string]string{}
	for _, e := range ps.Containers[0].Env {
		env[e.Name] = e.Value
	}

	// The key: its secret volume's item, with its mode (Kubernetes' default 0644 when none).
	var keyFile, keyID string
	var pubKey ed25519.PublicKey
	for _, v := range ps.Volumes {
		if v.Secret == nil || v.Name != "key" {
			continue
		}
		mode := 0o644
		if v.Secret.DefaultMode != nil {
			mode = *v.Secret.DefaultMode
		}
		require.Len(t, v.Secret.Items, 1)
		if v.Secret.Items[0].Mode != nil {
			mode = *v.Secret.Items[0].Mode
		}
		pub, priv, err := attest.GenerateKey()
		require.NoError(t, err)
		keyID, pubKey = attest.KeyID(pub), pub
		tmp := filepath.Join(t.TempDir(), "k")
		require.NoError(t, attest.WritePrivateKey(tmp, priv))
		pem, err := os.ReadFile(tmp)
		require.NoError(t, err)
		dir := filepath.Join(root, mounts["key"])
		require.NoError(t, os.MkdirAll(dir, 0o755))
		keyFile = k.secretVolume(t, dir, v.Secret.Items[0].Path, pem, os.FileMode(mode))
	}
	require.NotEmpty(t, keyFile, "the manifest mounts a secret volume named key")
	require.Equal(t, filepath.Join(mounts["key"], filepath.Base(keyFile)), env["PROBECTL_SIGNING_KEY"],
		"the worker is pointed at the key's mount")

	// The spool volume: a fresh file system's root (root's, 0755, with lost+found), owned for fsGroup.
	volume := filepath.Join(root, mounts["spool"])
	require.NoError(t, os.MkdirAll(volume, 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(volume, "lost+found"), 0o700))
	require.NoError(t, os.Chmod(volume, 0o755))
	k.ownAll(t, volume, false)

	c := m.Spec.Template.Spec.Containers[0]
	args := slices.Clone(c.Args)
	i := slices.Index(args, "--spool-dir")
	require.Positive(t, i)
	require.True(t, strings.HasPrefix(args[i+1], mounts["spool"]), "the spool is on its volume")
	args[i+1] = filepath.Join(root, args[i+1])

	bin := buildBinary(t)
	require.NoError(t, os.Chmod(bin, 0o755))
	for p := filepath.Dir(bin); p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		require.NoError(t, os.Chmod(p, 0o755))
	}
	url := migrated.NewDB(t)
	pool := dbtest.Pool(t, url)
	require.NoError(t, queries.RegisterSigningKey(t.Context(), pool, keyID, pubKey))

	run := func(what string) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = []string{"PROBECTL_DATABASE_URL=" + url, "PROBECTL_SIGNING_KEY=" + filepath.Join(root, env["PROBECTL_SIGNING_KEY"]),
			"HOME=/nonexistent", "PATH=/usr/bin:/bin"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
			Uid: uint32(*sc.RunAsUser), Gid: uint32(*gid), Groups: []uint32{uint32(*sc.FSGroup)}}}
		logs, err := os.CreateTemp(t.TempDir(), "worker")
		require.NoError(t, err)
		cmd.Stderr = logs
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		deadline := time.Now().Add(time.Minute)
		for queryInt(t, pool, "SELECT count(*)::int FROM probectl_workers WHERE pid = $1 AND stopped_at IS NULL", cmd.Process.Pid) == 0 {
			select {
			case err := <-done:
				out, _ := os.ReadFile(logs.Name())
				t.Fatalf("%s: the worker exited (%v) instead of starting:\n%s", what, err, out)
			case <-time.After(100 * time.Millisecond):
			}
			require.True(t, time.Now().Before(deadline), "%s: the worker did not start within a minute", what)
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, <-done, "%s: the worker stops cleanly", what)
	}
	run("first start")

	// A restart: the kubelet owns the volume again, the whole tree unless its policy says to
	// leave a volume whose root is already the group's.
	if ps.SecurityContext.FSGroupChangePolicy != "OnRootMismatch" {
		k.ownAll(t, volume, false)
	}
	run("after a restart")
	info, err := os.Stat(args[i+1])
	require.NoError(t, err)
	require.Equal(t, uint32(*sc.RunAsUser), info.Sys().(*syscall.Stat_t).Uid, "the spool is the worker's own")

}
