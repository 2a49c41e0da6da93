//go:build unix

package attest

import (
	"os"
	"path/filepath"
	"syscall"
)

// podSecret says whether a key file that its group may read is a Kubernetes secret as the kubelet
// gives it to a pod whose user is not root (deploy/kubernetes): owned by root, readable by its
// group and by nobody else, its group this process's own effective group (the pod's runAsGroup,
// which the manifest makes its fsGroup), and the path given sits in a secret volume as the
// kubelet writes one: beside it, a "..data" symlink to the volume's current contents. Each sign
// alone is common on a shared host (root:users 0440, a supplementary group this process happens
// to hold); a key readable by a group is accepted only with all of them. A group that may write
// the file, or a file others may read, is refused all the same.
func podSecret(path string, info os.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	perm := info.Mode().Perm()
	if perm&0o007 != 0 || perm&0o070 != 0o040 || st.Uid != 0 || st.Gid == 0 || os.Geteuid() == 0 {
		return false
	}
	if int(st.Gid) != os.Getegid() {
		return false
	}
	data, err := os.Lstat(filepath.Join(filepath.Dir(path), "..data"))
	return err == nil && data.Mode()&os.ModeSymlink != 0
}
