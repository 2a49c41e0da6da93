package main

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
)

// readOnlyHint says what to check when the database refused a write because it takes none: a hot
// standby (after a failover, a URL still naming the old primary, now a standby) or a read-only
// role or database. Without it the error was PostgreSQL's alone ("cannot execute INSERT in a
// read-only transaction"), which names no way out.
const readOnlyHint = "the database takes no writes here: it is a hot standby, or its role or database is read-only " +
	"(default_transaction_read_only); point --database-url (or PROBECTL_DATABASE_URL) at the primary, or add " +
	"target_session_attrs=read-write to a URL that names several hosts"

// withHints adds what to check to an error PostgreSQL gave for a reason the user can act on,
// keeping the error (and its exit code) as it was.
func withHints(err error) error {
	pgErr, ok := errors.AsType[*pgconn.PgError](err)
	if !ok {
		return err
	}
	// 25006 read_only_sql_transaction; 55000 "recovery is in progress": a WAL function on a standby.
	if pgErr.Code == "25006" || (pgErr.Code == "55000" && pgErr.Message == "recovery is in progress") {
		return &hintedError{err: err, hint: readOnlyHint}
	}
	return err
}

// hintedError is an error with what to check said after it.
type hintedError struct {
	err  error
	hint string
}

func (e *hintedError) Error() string { return fmt.Sprintf("%v (%s)", e.err, e.hint) }
func (e *hintedError) Unwrap() error { return e.err }
