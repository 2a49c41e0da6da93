package pglaunch

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// serverUser is the OS user the server runs as when we are root, because
// PostgreSQL refuses to run as root.
const serverUser = "postgres"

// serverCredential returns nil when the current user can run PostgreSQL
// itself, and the credential of serverUser when we are root.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup(serverUser)
	if err != nil {
		return nil, fmt.Errorf("running as root, which PostgreSQL refuses, and found no %q OS user to run it as (%w); create one, e.g. `useradd --system postgres`, or run as an ordinary user", serverUser, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("parse uid of user %q: %w", serverUser, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("parse gid of user %q: %w", serverUser, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// makeRoot creates the cluster's private directory (mode 0700) under
// os.TempDir and hands it to cred's user, who must be able to reach it.
func makeRoot(cred *syscall.Credential) (string, error) {
	dir, err := os.MkdirTemp("", "pglaunch-")
	if err != nil {
		return "", fmt.Errorf("create temporary directory: %w", err)
	}
	if cred == nil {
		return dir, nil
	}
	if err := canTraverse(filepath.Dir(dir), cred); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("hand %s to user %q: %w", dir, serverUser, err)
	}
	return dir, nil
}

// mkdirOwned creates a 0700 directory that cred's user (or we) own.
func mkdirOwned(path string, cred *syscall.Credential) error {
	if err := os.Mkdir(path, 0o700); err != nil {
		return err
	}
	if cred == nil {
		return nil
	}
	return os.Chown(path, int(cred.Uid), int(cred.Gid))
}

// canTraverse checks that cred's user may search every directory from dir up
// to /, so initdb fails here with advice rather than later with EACCES.
func canTraverse(dir string, cred *syscall.Credential) error {
	for {
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("check access to %s: %w", dir, err)
		}
		if !searchable(fi, cred) {
			return fmt.Errorf("user %q cannot enter %s, needed to reach the temporary directory; set TMPDIR to a directory it can reach, such as /tmp", serverUser, dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

func searchable(fi os.FileInfo, cred *syscall.Credential) bool {
	perm := fi.Mode().Perm()
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return true // cannot tell; let initdb report it
	case st.Uid == cred.Uid:
		return perm&0o100 != 0
	case st.Gid == cred.Gid:
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}
