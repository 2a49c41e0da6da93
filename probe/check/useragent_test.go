package check

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEveryRequestNamesProbectlItsVersionAndAContact(t *testing.T) {
	t.Parallel()
	srv := newFleet(t, http.HandlerFunc(ok))
	res := New(Config{AllowPrivate: true, UserAgent: UserAgent("v1.2.0", "https://probe.example/about")}).
		Check(context.Background(), Target{URL: srv.URL, Kind: "http"})
	require.Equal(t, OutcomeOK, res.Outcome, res.Error)
	assert.Equal(t, "probectl/v1.2.0 (+https://probe.example/about)", srv.Requests()[0].Header.Get("User-Agent"))

	New(Config{AllowPrivate: true}).Check(context.Background(), Target{URL: srv.URL, Kind: "http"})
	assert.Regexp(t, `^probectl/\S+ \(\+https://github.com/probectl/probectl\)$`, srv.Requests()[1].Header.Get("User-Agent"),
		"without a contact, the default one")
}
