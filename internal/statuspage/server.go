package statuspage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// ShutdownTimeout is how long Serve waits for requests in progress once its context ends.
const ShutdownTimeout = 10 * time.Second

// Serve answers HTTP on ln with h until ctx ends, then shuts down gracefully: it stops accepting,
// lets requests in progress finish (for up to ShutdownTimeout) and returns nil. It returns an
// error only when serving itself failed.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv := &http.Server{
		Handler: h,
		// A client that sends its headers slowly must not hold a connection (Slowloris).
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		// Longer than a request's database read (DefaultReadTimeout), so a slow read still answers.
		WriteTimeout:   30 * time.Second,
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	select {
	case err := <-errc:
		return fmt.Errorf("serve http on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "addr", ln.Addr().String())
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(shutdownCtx)
	if serveErr := <-errc; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serve http on %s: %w", ln.Addr(), serveErr)
	}
	if err != nil {
		return fmt.Errorf("shut down http server on %s: %w", ln.Addr(), err)
	}
	return nil
}

// ListenAndServe listens on addr (host:port; port 0 picks a free one), calls ready with the
// address it got, and serves the status routes until ctx ends (see Serve).
func ListenAndServe(ctx context.Context, addr string, opts Options, ready func(net.Addr)) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log.Info("serving the status page", "url", "http://"+ln.Addr().String()+english.Path,
		"zh", "http://"+ln.Addr().String()+chinese.Path)
	if ready != nil {
		ready(ln.Addr())
	}
	return Serve(ctx, ln, Handler(opts), log)
}
