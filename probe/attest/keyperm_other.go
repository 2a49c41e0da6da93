//go:build !unix

package attest

import "os"

// podSecret: Kubernetes' secret volumes are a unix shape.
func podSecret(string, os.FileInfo) bool { return false }
