package probe

import (
	"errors"

	"golang.org/x/sys/unix"
)

// renameNoReplace renames from to to, unless to exists (an error that is fs.ErrExist): the rename
// itself refuses (renameat2's RENAME_NOREPLACE). Where the file system cannot, it looks first, as
// elsewhere (renameLooked).
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return renameLooked(from, to)
	}
	return err // nil, EEXIST (fs.ErrExist) or why the rename failed
}
