//go:build !linux

package fakefleet

import "syscall"

// childAttr is nil: no network namespace is made here (unshare is Linux's).
func childAttr() *syscall.SysProcAttr { return nil }
