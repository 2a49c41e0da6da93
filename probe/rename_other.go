//go:build !linux

package probe

// renameNoReplace renames from to to, unless to exists (an error that is fs.ErrExist), looking
// first (renameLooked).
func renameNoReplace(from, to string) error { return renameLooked(from, to) }
