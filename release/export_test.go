package release

// Test seams: the external tests reach the unexported hooks of RollbackRequest through these.

// SetAfterLock makes the rollback call fn once it holds the lock and has read the active release.
func SetAfterLock(req *RollbackRequest, fn func()) { req.afterLock = fn }

// WithoutLock makes the rollback skip both its locks (the releases lock and the active row's), to
// show what they guard.
func WithoutLock(req *RollbackRequest) { req.noAdvisoryLock, req.noRowLock = true, true }

// WithoutAdvisoryLock makes the rollback skip the releases lock only, as a writer that does not
// take it would: the active row's lock is what is left.
func WithoutAdvisoryLock(req *RollbackRequest) { req.noAdvisoryLock = true }
