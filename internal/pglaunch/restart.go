package pglaunch

import (
	"context"
	"errors"
)

// Shutdown stops the server as `pg_ctl stop -m fast` does (every session is terminated) and
// keeps its data, so that Resume brings the same cluster back on the same port: a database
// restart or outage as its clients see it. Stop is Shutdown, then the directory removed.
func (c *Cluster) Shutdown() error {
	if c.proc == nil {
		return errors.New("pglaunch: shutdown of a cluster that is not running")
	}
	return c.proc.shutdown(stopTimeout)
}

// Resume starts the cluster's server on its port and returns once it accepts connections: for
// the first time from Start, and again after Shutdown, on the same port, as a restarted database
// comes back.
func (c *Cluster) Resume(ctx context.Context) error {
	if c.proc != nil && !c.proc.exited() {
		return errors.New("pglaunch: resume of a cluster that is running")
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	if err := c.startPostgres(c.binDir, c.cred, c.port); err != nil {
		return err
	}
	return c.waitReady(ctx)
}
