package pglaunch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrNoBinaries is matched with errors.Is when no PostgreSQL server binaries
// could be found, so callers (tests, `probectl demo`) can tell "install
// PostgreSQL" apart from a cluster that failed to start.
var ErrNoBinaries = errors.New("PostgreSQL server binaries not found")

// debianBinGlob is where Debian and Ubuntu packages install one directory of
// server binaries per major version, none of them on PATH.
const debianBinGlob = "/usr/lib/postgresql/*/bin"

// findBinDir returns the directory holding initdb and postgres: explicit,
// when the caller named one; otherwise the first hit of pg_config, initdb on
// PATH and the highest Debian versioned directory.
func findBinDir(ctx context.Context, explicit string) (string, error) {
	if explicit != "" {
		if hasServer(explicit) {
			return explicit, nil
		}
		return "", noBinaries([]string{explicit})
	}
	var looked []string
	if dir, ok := pgConfigBinDir(ctx); ok {
		looked = append(looked, dir)
		if hasServer(dir) {
			return dir, nil
		}
	}
	looked = append(looked, "$PATH")
	if dir, ok := initdbOnPath(); ok && hasServer(dir) {
		return dir, nil
	}
	looked = append(looked, debianBinGlob)
	if dir, ok := highestDebianBinDir(); ok {
		return dir, nil
	}
	return "", noBinaries(looked)
}

func noBinaries(looked []string) error {
	return fmt.Errorf("%w (looked in %s); install them, e.g. `apt-get install postgresql`, or pass their directory",
		ErrNoBinaries, strings.Join(looked, ", "))
}

// pgConfigBinDir asks pg_config, which may belong to a client-only package
// whose bindir lacks the server; hasServer decides.
func pgConfigBinDir(ctx context.Context) (string, bool) {
	path, err := exec.LookPath("pg_config")
	if err != nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--bindir").Output()
	if err != nil {
		return "", false
	}
	dir := strings.TrimSpace(string(out))
	return dir, dir != ""
}

// initdbOnPath follows symlinks, because initdb is often linked into
// /usr/local/bin alone while postgres stays in its versioned directory.
func initdbOnPath() (string, bool) {
	path, err := exec.LookPath("initdb")
	if err != nil {
		return "", false
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", false
	}
	abs, err := filepath.Abs(real)
	if err != nil {
		return "", false
	}
	return filepath.Dir(abs), true
}

func highestDebianBinDir() (string, bool) {
	dirs, _ := filepath.Glob(debianBinGlob)
	sort.Slice(dirs, func(i, j int) bool {
		return versionOf(dirs[i]) > versionOf(dirs[j])
	})
	for _, dir := range dirs {
		if hasServer(dir) {
			return dir, true
		}
	}
	return "", false
}

// versionOf reads the major version from /usr/lib/postgresql/<v>/bin, so 16
// sorts above 9.6; unparsable names sort last.
func versionOf(binDir string) float64 {
	v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	if err != nil {
		return -1
	}
	return v
}

func hasServer(dir string) bool {
	return isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres"))
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
