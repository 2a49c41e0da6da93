package main

import (
	"archive/zip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResolveBuild(t *testing.T) {
	t.Parallel()
	vcs := func(settings ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/probectl/probectl", Version: "(devel)"}}
		for i := 0; i+1 < len(settings); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return info
	}
	unstampedBuild := buildInfo{Version: "dev", Commit: "none", Date: "unknown"}
	tests := []struct {
		name    string
		stamped buildInfo
		info    *debug.BuildInfo
		want    buildInfo
	}{
		{"a release build keeps what ldflags stamped", buildInfo{Version: "v1.2.0", Commit: "abcdef0", Date: "2026-11-30T00:00:00Z"},
			vcs("vcs.revision", "0123456789abcdef"), buildInfo{Version: "v1.2.0", Commit: "abcdef0", Date: "2026-11-30T00:00:00Z"}},
		{"go build in a clean checkout says the commit and its time", unstampedBuild,
			vcs("vcs.revision", "0123456789abcdef", "vcs.time", "2026-11-29T10:00:00Z", "vcs.modified", "false"),
			buildInfo{Version: "dev", Commit: "0123456", Date: "2026-11-29T10:00:00Z"}},
		{"go build in a changed checkout says dirty", unstampedBuild,
			vcs("vcs.revision", "0123456789abcdef", "vcs.modified", "true"),
			buildInfo{Version: "dev", Commit: "0123456-dirty", Date: "unknown"}},
		{"go install of a tagged module says the tag", unstampedBuild,
			&debug.BuildInfo{Main: debug.Module{Path: "github.com/probectl/probectl", Version: "v1.3.0"}},
			buildInfo{Version: "v1.3.0", Commit: "none", Date: "unknown"}},
		{"no build info leaves dev", unstampedBuild, nil, unstampedBuild},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, resolveBuild(tt.stamped, tt.info))
		})
	}
}

// goEnv is the environment for a go command run by a test: the machine's, with GOFLAGS replaced
// (CI sets -mod=readonly and this machine -buildvcs=false, both wrong for what is tested here).
func goEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOFLAGS=") && !strings.HasPrefix(kv, "GOPROXY=") && !strings.HasPrefix(kv, "GOMODCACHE=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

// versionJSON runs a built binary's `version -o json`.
func versionJSON(t *testing.T, bin string) buildInfo {
	t.Helper()
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	require.NoError(t, err)
	var b buildInfo
	require.NoError(t, json.Unmarshal(out, &b))
	return b
}

// TestVersionOfAnInstalledModule installs probectl the way a user without a package would,
// `go install github.com/probectl/probectl/cmd/probectl@v1.99.0`, from a module proxy made of this
// checkout's files (file://, the module cache standing in for every dependency), and checks that
// the binary names the version it was installed at.
func TestVersionOfAnInstalledModule(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	const mod, ver = "github.com/probectl/probectl", "v1.99.0"
	tmp := t.TempDir()
	proxy := filepath.Join(tmp, "proxy", mod, "@v")
	require.NoError(t, os.MkdirAll(proxy, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(proxy, "list"), []byte(ver+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(proxy, ver+".info"), []byte(`{"Version":"`+ver+`","Time":"2026-11-30T00:00:00Z"}`), 0o644))
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(proxy, ver+".mod"), gomod, 0o644))
	writeModuleZip(t, root, filepath.Join(proxy, ver+".zip"), mod+"@"+ver+"/")

	cache := goCmd(t, root, goEnv(), "env", "GOMODCACHE")
	bin := filepath.Join(tmp, "bin")
	env := goEnv("GOFLAGS=-modcacherw -trimpath", "GOBIN="+bin, "GOWORK=off", "GOSUMDB=off", "GOTOOLCHAIN=local",
		"GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GOPROXY=file://"+filepath.Join(tmp, "proxy")+",file://"+filepath.Join(cache, "cache", "download"))
	goCmd(t, tmp, env, "install", mod+"/cmd/probectl@"+ver)

	got := versionJSON(t, filepath.Join(bin, "probectl"))
	require.Equal(t, buildInfo{Version: ver, Commit: "none", Date: "unknown"}, got)
}

// TestVersionOfAPlainBuild builds probectl with `go build` in a checkout with a change not yet
// committed, as a contributor would, and checks that it names the commit it was built from, dirty.
// The checkout is a fresh repository holding this work tree's files: the go command finds no
// repository in a git worktree (its .git is a file), and the test must not depend on how the
// checkout under test was made.
func TestVersionOfAPlainBuild(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	dir := t.TempDir()
	for _, name := range trackedFiles(t, root) {
		data, err := os.ReadFile(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	git := func(args ...string) string {
		return goCmdOut(t, dir, "git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "snapshot")
	want := git("rev-parse", "--short=7", "HEAD") + "-dirty"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "uncommitted.txt"), []byte("change"), 0o644))

	bin := filepath.Join(t.TempDir(), "probectl")
	goCmd(t, dir, goEnv("GOFLAGS=-buildvcs=true -trimpath"), "build", "-o", bin, "./cmd/probectl")
	got := versionJSON(t, bin)
	require.Equal(t, want, got.Commit)
	require.NotEqual(t, "unknown", got.Date)
}

// trackedFiles are the files git tracks or would track in root (committed or not, ignored ones
// left out): what a module zip or a fresh checkout would hold.
func trackedFiles(t *testing.T, root string) []string {
	t.Helper()
	return strings.Split(goCmdOut(t, root, "git", "ls-files", "--cached", "--others", "--exclude-standard"), "\n")
}

func goCmdOut(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	require.NoError(t, err, "%s %s", name, strings.Join(args, " "))
	return strings.TrimSpace(string(out))
}

// repoRoot is the module's root directory (the test runs in cmd/probectl).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"))
	return root
}

// writeModuleZip writes the module zip a proxy serves: root's trackedFiles under prefix, as
// `go mod download` expects them.
func writeModuleZip(t *testing.T, root, dst, prefix string) {
	t.Helper()
	files := trackedFiles(t, root)
	out, err := os.Create(dst)
	require.NoError(t, err)
	zw := zip.NewWriter(out)
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in a commit
		}
		require.NoError(t, err)
		w, err := zw.Create(prefix + name)
		require.NoError(t, err)
		_, err = w.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	require.NoError(t, out.Close())
}
