// Package notices keeps THIRD_PARTY_NOTICES, shipped beside the binary in every archive and
// package, current: the licence texts (and NOTICE files) of the Go toolchain and of every module
// linked into probectl. Its test writes the file (`make generate`) and fails while the file
// disagrees with go.mod.
package notices
