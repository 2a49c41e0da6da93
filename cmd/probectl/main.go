// Command probectl claims the servers of a public directory that are due, checks them
// concurrently, records each check as a signed run, and proves that nothing was checked twice.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // --tz must work on hosts without a zone database (minimal containers)

	"github.com/probectl/probectl/internal/render"
)

// Set by goreleaser's ldflags; "dev" when built by hand.
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

func main() {
	// SIGHUP (the terminal or the ssh session closed) stops as SIGTERM does: its default action
	// would kill a round or a worker at once, with checks made and nothing stored.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := Execute(ctx, os.Args[1:], render.System(), os.Getenv)
	stop()
	os.Exit(code)
}
