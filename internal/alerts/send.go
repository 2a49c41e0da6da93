package alerts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/probectl/probectl/probe/check"
)

// Bounds of one attempt.
const (
	// AttemptTimeout bounds one request to a receiver, connection included.
	AttemptTimeout = 10 * time.Second
	// maxAnswer is how much of a receiver's answer is read (and kept for `receivers test`).
	maxAnswer = 4 << 10
)

// Sender posts to receivers: through the SSRF guard's dialer with private and loopback addresses
// allowed (an Alertmanager or a webhook relay usually lives on an internal network) and cloud
// metadata endpoints always refused (check.GuardedDialContext(true)), without following
// redirects (a receiver that redirects has not taken the event), each request bounded by
// AttemptTimeout.
type Sender struct {
	client *http.Client
}

// NewSender makes a Sender.
func NewSender() *Sender {
	tr := &http.Transport{DialContext: check.GuardedDialContext(true), Proxy: nil,
		TLSHandshakeTimeout: AttemptTimeout, ResponseHeaderTimeout: AttemptTimeout, MaxIdleConnsPerHost: 4}
	return &Sender{client: &http.Client{Transport: tr, Timeout: AttemptTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// Answer is what a receiver answered: its status and the start of its body.
type Answer struct {
	Status int
	Body   []byte
}

// OK: the receiver took the event (a 2xx).
func (a Answer) OK() bool { return a.Status >= 200 && a.Status < 300 }

func (s *Sender) send(ctx context.Context, r request) (Answer, error) {
	ctx, cancel := context.WithTimeout(ctx, AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(r.body))
	if err != nil {
		return Answer{}, fmt.Errorf("make request: %w", err)
	}
	req.Header = r.header.Clone()
	req.Header.Set("User-Agent", "probectl-alerts")
	resp, err := s.client.Do(req)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	return Answer{Status: resp.StatusCode, Body: body}, nil
}

// SafeError is an attempt's error fit to store and print: net/http's errors quote the whole URL,
// and a receiver's URL may be its secret (Slack's is), so the URL is dropped.
func SafeError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Sprintf("%s: %v", strings.ToLower(ue.Op), ue.Err)
	}
	return err.Error()
}
