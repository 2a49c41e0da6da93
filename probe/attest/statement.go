package attest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/probectl/probectl/probe/check"
)

// Fixed identifiers of what we sign. Changing one is a new statement format, not a tweak.
const (
	// StatementType is the in-toto Statement version we produce.
	StatementType = "https://in-toto.io/Statement/v1"
	// PredicateType names our predicate, so that other in-toto tooling can tell it apart.
	PredicateType = "https://probectl.dev/probe-run/v1"
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
)

// Run is what one signed observation covers: which job of which round checked which server, and
// what the check saw.
type Run struct {
	JobID      int64
	ServerID   int64
	Slug       string
	URL        string
	Kind       string
	RoundID    int64
	Invocation int
	Result     check.Result
}

// Statement is an in-toto Statement v1 carrying a probe run.
type Statement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     Predicate `json:"predicate"`
}

// Subject names the server checked; its digest is of the endpoint URL, so a run cannot be passed
// off as one of a server that has the same slug but another endpoint.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Predicate is the run itself.
type Predicate struct {
	JobID      int64        `json:"job_id"`
	RoundID    int64        `json:"round_id"`
	Invocation int          `json:"invocation"`
	Server     Server       `json:"server"`
	Result     check.Result `json:"result"`
}

// Server is the server as the round saw it when it claimed the job.
type Server struct {
	ID   int64  `json:"id"`
	Slug string `json:"slug"`
	URL  string `json:"url"`
	Kind string `json:"kind"`
}

// URLDigest is the subject digest of an endpoint URL: hex SHA-256 of its exact bytes.
func URLDigest(url string) string {
	sum := sha256.Sum256([]byte(url))
	return hex.EncodeToString(sum[:])
}

func newStatement(r Run) Statement {
	return Statement{
		Type:          StatementType,
		Subject:       []Subject{{Name: r.Slug, Digest: map[string]string{"sha256": URLDigest(r.URL)}}},
		PredicateType: PredicateType,
		Predicate: Predicate{
			JobID:      r.JobID,
			RoundID:    r.RoundID,
			Invocation: r.Invocation,
			Server:     Server{ID: r.ServerID, Slug: r.Slug, URL: r.URL, Kind: r.Kind},
			Result:     r.Result,
		},
	}
}

// ErrWrongSubject says a validly signed statement is about another server (or another job) than
// the one it is stored against: a run copied onto the wrong row.
var ErrWrongSubject = errors.New("statement is about another server")

// CheckSubject reports whether the statement is about the server with that slug and endpoint
// URL. Verify proves who signed; this proves what was signed is the row's own server.
func (st *Statement) CheckSubject(slug, url string) error {
	if len(st.Subject) != 1 {
		return fmt.Errorf("%w: %d subjects, want 1", ErrWrongSubject, len(st.Subject))
	}
	s := st.Subject[0]
	if s.Name != slug {
		return fmt.Errorf("%w: subject %q, want %q", ErrWrongSubject, s.Name, slug)
	}
	if s.Digest["sha256"] != URLDigest(url) {
		return fmt.Errorf("%w: subject %q has the digest of another endpoint url", ErrWrongSubject, slug)
	}
	if st.Predicate.Server.Slug != slug || st.Predicate.Server.URL != url {
		return fmt.Errorf("%w: predicate names server %q at %q", ErrWrongSubject,
			st.Predicate.Server.Slug, st.Predicate.Server.URL)
	}
	return nil
}

// CheckJob reports whether the statement is the run of that job, so a valid envelope moved
// from one probe_runs row to another is caught.
func (st *Statement) CheckJob(jobID int64) error {
	if st.Predicate.JobID != jobID {
		return fmt.Errorf("%w: statement is for job %d, want job %d", ErrWrongSubject, st.Predicate.JobID, jobID)
	}
	return nil
}
