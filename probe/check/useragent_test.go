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

func TestAContactMustBeAShortURLThatCannotBreakTheHeader(t *testing.T) {
	t.Parallel()
	for _, good := range []string{"https://probe.example/about", "mailto:probes@example.org", DefaultContact} {
		assert.NoError(t, ValidContact(good), good)
	}
	for _, bad := range []string{"probe.example", "ftp://probe.example/", "https://probe.example/\r\nX-Evil: 1",
		"https://probe.example/a b", "https://u:p@probe.example/", "https://probe.example/(x)",
		"https://probe.example/" + string(make([]byte, 200))} {
		assert.Error(t, ValidContact(bad), "%q", bad)
	}
}
