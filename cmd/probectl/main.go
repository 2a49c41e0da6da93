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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Execute(ctx, os.Args[1:], render.System(), os.Getenv)
	stop()
	os.Exit(code)
}
