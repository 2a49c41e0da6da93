package queries

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/input"
	"github.com/probectl/probectl/internal/pgutc"
)

// URLSource says where a database URL came from, for messages like "from PROBECTL_DATABASE_URL":
// the command that read it names it (cmd/probectl's resolveURL).
type URLSource string

// InputDatabaseURL is the database URL a command was given, as UnreachableError's hints name it
// (see internal/input): the command says it as its flag.
const InputDatabaseURL input.Name = "database_url"

// ConnectOptions tune the pool; zero values take the defaults.
type ConnectOptions struct {
	// StatementTimeout bounds every statement (default 5m); a runaway query must not hold locks.
	StatementTimeout time.Duration
	// IdleInTxTimeout ends sessions that sit in an open transaction (default 1m).
	IdleInTxTimeout time.Duration
	// MaxConns caps the pool (default: pgxpool's).
	MaxConns int32
	// Read: the URL names the standby the commands that only read use (its errors say so).
	Read bool
}

// BadURLError is a database URL that cannot be parsed: bad input, not an outage.
type BadURLError struct {
	Source URLSource
	Err    error
}

func (e *BadURLError) Error() string {
	return fmt.Sprintf("bad database url (from %s): %s", e.Source, parseReason(e.Err))
}

// parseReason says why a connection string did not parse without quoting the string: pgx
// redacts the password it could find, but a string that does not parse may not show where the
// password ends.
func parseReason(err error) string {
	var notPG *notPostgresError
	if errors.As(err, &notPG) {
		return notPG.Error()
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, "`: "); i >= 0 {
		return msg[i+3:]
	}
	if inner := errors.Unwrap(err); inner != nil {
		return inner.Error()
	}
	return "cannot parse it"
}

func (e *BadURLError) Unwrap() error { return e.Err }

// notPostgresError is a URL of another database (mysql://, sqlite://): only its scheme is said,
// since the rest may hold a password.
type notPostgresError struct{ scheme string }

func (e *notPostgresError) Error() string {
	return fmt.Sprintf("not a PostgreSQL URL (scheme %q); probectl needs postgres://user@host:5432/dbname", e.scheme)
}

// UnreachableError says the database could not be reached. It names the host and port and never
// the password.
type UnreachableError struct {
	Host string
	Port uint16
	Err  error
	// Unconfigured: no flag, variable or PG* setting named a database, and libpq's default (a
	// local server, as the OS user) did not answer either.
	Unconfigured bool
	// ReadSource, when set, is where the URL of the standby the commands that only read use came
	// from (--read-database-url, PROBECTL_READ_DATABASE_URL): the hint names it, not the primary's.
	ReadSource URLSource
}

func (e *UnreachableError) Error() string { return e.text().Error() }

// text is the message, with the input that names a database kept apart (a command says its flag).
func (e *UnreachableError) text() *input.Text {
	if e.Unconfigured {
		return input.Errorf("no database is configured, and none answered at the default %s (%s); "+
			"name one with %s or PROBECTL_DATABASE_URL, such as postgres://probectl@db.internal:5432/probectl "+
			"(DATABASE_URL and the PG* variables work too)",
			net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), e.Err.Error(), InputDatabaseURL)
	}
	if e.ReadSource != "" {
		return input.Errorf("could not reach the read database at %s: %s; check that PostgreSQL is running there and that %s "+
			"(the standby the commands that only read use) points at it",
			net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), e.Err.Error(), string(e.ReadSource))
	}
	return input.Errorf("could not reach database at %s: %s; check that PostgreSQL is running and that "+
		"%s, PROBECTL_DATABASE_URL, DATABASE_URL or PG* point at it",
		net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port))), e.Err.Error(), InputDatabaseURL)
}

// Unwrap is the cause, and the message whose input a command says as its flag.
func (e *UnreachableError) Unwrap() []error { return []error{e.Err, e.text()} }

// Connect opens a pool on url and checks that the database answers.
func Connect(ctx context.Context, url string, source URLSource, opts ConnectOptions) (*pgxpool.Pool, error) {
	if scheme, _, ok := strings.Cut(url, "://"); ok && scheme != "postgres" && scheme != "postgresql" {
		return nil, &BadURLError{Source: source, Err: &notPostgresError{scheme: scheme}}
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, &BadURLError{Source: source, Err: err}
	}
	password := cfg.ConnConfig.Password
	params := cfg.ConnConfig.RuntimeParams
	setDefault(params, "application_name", "probectl")
	// The claim's lock serialises claims only under READ COMMITTED (probe_claim refuses anything
	// else); a role or database that defaults to REPEATABLE READ must not change that. Audits ask
	// for REPEATABLE READ explicitly, per transaction.
	params["default_transaction_isolation"] = "read committed"
	setDefault(params, "statement_timeout", millis(opts.StatementTimeout, 5*time.Minute))
	setDefault(params, "idle_in_transaction_session_timeout", millis(opts.IdleInTxTimeout, time.Minute))
	if opts.MaxConns > 0 {
		cfg.MaxConns = opts.MaxConns
	}
	// Every timestamptz scanned comes back in UTC: callers never convert what they read.
	cfg.AfterConnect = pgutc.AfterConnect
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
		if err != nil {
			pool.Close()
		}
	}
	if err != nil {
		ue := &UnreachableError{
			Host:         cfg.ConnConfig.Host,
			Port:         cfg.ConnConfig.Port,
			Err:          errors.New(redact(lastLine(err.Error()), password)),
			Unconfigured: url == "",
		}
		if opts.Read {
			ue.ReadSource = source
		}
		return nil, ue
	}
	return pool, nil
}

func setDefault(params map[string]string, key, value string) {
	if _, ok := params[key]; !ok {
		params[key] = value
	}
}

func millis(d, def time.Duration) string {
	if d <= 0 {
		d = def
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// lastLine keeps the most specific part of pgx's connect error: its last line is the reason the
// last address tried gave ("dial tcp ...: connection refused", "password authentication failed").
func lastLine(msg string) string {
	lines := strings.Split(strings.TrimSpace(msg), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if i := strings.Index(last, "): "); i >= 0 && len(lines) > 1 {
		last = last[i+3:]
	}
	return last
}

// redact removes a password from an error message, whatever form the driver put it in.
func redact(msg, password string) string {
	if password != "" {
		msg = strings.ReplaceAll(msg, password, "xxxxx")
	}
	return msg
}

// InTx runs fn in a transaction: committed when fn returns nil, rolled back otherwise.
func InTx(ctx context.Context, db interface {
	Begin(context.Context) (pgx.Tx, error)
}, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db, fn)
}

// InReadOnlyTx runs fn in a READ ONLY transaction, for audits: safe on a hot standby, and the
// database itself refuses any write fn might attempt.
func InReadOnlyTx(ctx context.Context, db interface {
	BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
}, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, db, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, fn)
}

// ExitCode: a bad URL is bad input.
func (e *BadURLError) ExitCode() int { return exit.Usage }

// ExitCode: an unreachable database means the work could not be done.
func (e *UnreachableError) ExitCode() int { return exit.Unavailable }
