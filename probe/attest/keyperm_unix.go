//go:build unix

package attest

import (
	"os"
	"slices"
	"syscall"
)

// podSecret says whether a key file that its group may read is a Kubernetes secret as the kubelet
// gives it to a pod whose user is not root (deploy/kubernetes): owned by root, its group the
// pod's fsGroup, which this process holds, readable by that group and by nobody else. A process
// that is not root can read a secret only so; a group that may write the file, or a file others
// may read, is refused all the same.
func podSecret(info os.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	perm := info.Mode().Perm()
	if perm&0o007 != 0 || perm&0o070 != 0o040 || st.Uid != 0 || st.Gid == 0 || os.Geteuid() == 0 {
		return false
	}
	gid := int(st.Gid)
	groups, err := os.Getgroups()
	return gid == os.Getegid() || (err == nil && slices.Contains(groups, gid))
}
