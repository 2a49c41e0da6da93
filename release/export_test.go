package release

// Test seams: the external tests reach the unexported hooks of RollbackRequest through these.

// SetAfterLock makes the rollback call fn once it holds the lock and has read the active release.
func SetAfterLock(req *RollbackRequest, fn func()) { req.afterLock = fn }

// WithoutLock makes the rollback skip the releases lock, to show what the lock guards.
func WithoutLock(req *RollbackRequest) { req.noLock = true }
