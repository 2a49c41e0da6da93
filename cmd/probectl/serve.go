package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/statuspage"
)

type serveOptions struct {
	f           *factory
	Addr        string
	ReadTimeout time.Duration
	// ready, set by tests, is told the address once the server listens.
	ready func(net.Addr)
}

func newServeCmd(f *factory) *cobra.Command {
	opts := &serveOptions{f: f}
	cmd := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:8080]",
		Short: "Serve the status as web pages (English and Chinese), JSON and Prometheus metrics",
		// The routes are listed from the table the server registers (statuspage.Routes): the help
		// cannot omit one.
		Long: `Serve what 'probectl status' shows, and the directory's pages, over HTTP, until interrupted:

` + statuspage.RoutesHelp() + `

The pages are rendered on the server, load nothing from elsewhere, read well on a phone and
refresh themselves every 30 seconds. Each request reads the database afresh (one READ ONLY
transaction, bounded by --read-timeout); an unreadable database gives 503, not a stale page.

The server binds 127.0.0.1 unless told otherwise: it has no authentication, so put it behind
something that has before binding another address. Requests are logged to stderr. SIGINT or
SIGTERM stops it gracefully: requests in progress finish first.

Exit status: 0 after a graceful stop; 2 for a bad flag; 3 when the database cannot be reached at
start or the address cannot be bound.`,
		Example: `  probectl serve
  probectl serve --addr 127.0.0.1:9100
  curl -s localhost:8080/metrics | grep probectl_stale_jobs`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Addr, "addr", "127.0.0.1:8080", "host:port to listen on")
	durationVar(fl, &opts.ReadTimeout, "read-timeout", statuspage.DefaultReadTimeout, "bound on each request's read of the database")
	return cmd
}

func runServe(ctx context.Context, opts *serveOptions) error {
	f := opts.f
	host, _, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return exit.UsageError(fmt.Errorf("--addr %q: want host:port, e.g. 127.0.0.1:8080: %w", opts.Addr, err))
	}
	if opts.ReadTimeout <= 0 {
		return exit.UsageError(fmt.Errorf("--read-timeout %s: must be positive", opts.ReadTimeout))
	}
	log := slog.New(slog.NewTextHandler(f.IO.ErrOut, nil))
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		log.Warn("listening beyond loopback: the status page has no authentication", "addr", opts.Addr)
	}
	pool, err := f.ReadPool(ctx)
	if err != nil {
		return err
	}
	err = statuspage.ListenAndServe(ctx, opts.Addr, statuspage.Options{
		DB: pool, Now: f.Clock, ReadTimeout: opts.ReadTimeout, Logger: log,
	}, opts.ready)
	if err != nil {
		return exit.UnavailableError(err)
	}
	return nil
}
