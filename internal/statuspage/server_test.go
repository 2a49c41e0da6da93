package statuspage_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/statuspage"
)

func TestServeFinishesTheRequestInProgressWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "finished")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- statuspage.Serve(ctx, ln, h, nil) }()

	type answer struct {
		body string
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			answered <- answer{err: err}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		answered <- answer{string(b), err}
	}()

	<-started
	cancel()
	// Shutdown closes the listener first: once a new connection is refused, Serve is waiting
	// for the request in progress, which must still get its answer.
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return err != nil
	}, 10*time.Second, 5*time.Millisecond)
	select {
	case err := <-served:
		t.Fatalf("Serve returned (%v) before the request in progress finished", err)
	default:
	}
	close(release)

	a := <-answered
	require.NoError(t, a.err)
	require.Equal(t, "finished", a.body)
	require.NoError(t, <-served)
}

func TestListenAndServeSaysWhereItListens(t *testing.T) {
	t.Parallel()
	pool := migrated.Pool(t)
	ctx, cancel := context.WithCancel(context.Background())
	addrs := make(chan net.Addr, 1)
	served := make(chan error, 1)
	go func() {
		served <- statuspage.ListenAndServe(ctx, "127.0.0.1:0", statuspage.Options{DB: pool},
			func(a net.Addr) { addrs <- a })
	}()
	addr := <-addrs
	res, err := http.Get("http://" + addr.String() + "/healthz")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	cancel()
	require.NoError(t, <-served)
}

func TestListenAndServeFailsOnAnAddressInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	err = statuspage.ListenAndServe(context.Background(), ln.Addr().String(), statuspage.Options{}, nil)
	require.ErrorContains(t, err, "listen on "+ln.Addr().String())
}
