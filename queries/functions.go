package queries

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// BodyTag is the dollar-quote tag every function body in the migrations uses. The drift check
// finds bodies by it, so a function quoted otherwise would escape the check.
const BodyTag = "$probe$"

// createFunction finds "CREATE [OR REPLACE] FUNCTION name(" (optionally schema-qualified).
var createFunction = regexp.MustCompile(`(?is)\bCREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(?:[a-z_][a-z0-9_]*\.)?([a-z_][a-z0-9_]*)\s*\(`)

// overloadSeparator joins the bodies of a function's overloads (forms with different numbers of
// arguments, such as probe_claim's form kept for the previous binary), fewest arguments first.
const overloadSeparator = "\n-- next overload --\n"

// ShippedFunctionBodies returns the body of every function the embedded migrations define, as
// PostgreSQL stores it in pg_proc.prosrc: the text between the $probe$ tags. Migrations are read
// in version order and only their Up sections; a later definition of a name with as many
// arguments replaces an earlier one, and "DROP FUNCTION name(args)" removes one. A name with
// several forms maps to their bodies joined, fewest arguments first, as LiveFunctionBodies reads
// them.
func ShippedFunctionBodies() (map[string]string, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names) // zero-padded versions sort in order
	forms := map[form]string{}
	for _, name := range names {
		data, err := fs.ReadFile(migrationFiles, name)
		if err != nil {
			return nil, err
		}
		if err := functionBodies(upSection(string(data)), forms); err != nil {
			return nil, fmt.Errorf("migration %s: %w", path.Base(name), err)
		}
	}
	return joinForms(forms), nil
}

// form is one function: its name and number of arguments.
type form struct {
	name  string
	nargs int
}

// joinForms maps each name to its forms' bodies, fewest arguments first.
func joinForms(forms map[form]string) map[string]string {
	keys := make([]form, 0, len(forms))
	for f := range forms {
		keys = append(keys, f)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].name != keys[j].name {
			return keys[i].name < keys[j].name
		}
		return keys[i].nargs < keys[j].nargs
	})
	out := map[string]string{}
	for _, f := range keys {
		if prev, ok := out[f.name]; ok {
			out[f.name] = prev + overloadSeparator + forms[f]
		} else {
			out[f.name] = forms[f]
		}
	}
	return out
}

// countArgs counts the arguments of a parenthesised list that starts at src[0] == '(' and
// returns it with the length of the list.
func countArgs(src string) (n, length int) {
	depth, nonEmpty := 0, false
	for i, c := range src {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				if nonEmpty {
					n++
				}
				return n, i + 1
			}
		case ',':
			if depth == 1 {
				n++
			}
		case ' ', '\t', '\n', '\r':
		default:
			if depth == 1 {
				nonEmpty = true
			}
		}
	}
	return n, len(src)
}

// dropFunction finds "DROP FUNCTION [IF EXISTS] name(".
var dropFunction = regexp.MustCompile(`(?is)\bDROP\s+FUNCTION\s+(?:IF\s+EXISTS\s+)?(?:[a-z_][a-z0-9_]*\.)?([a-z_][a-z0-9_]*)\s*\(`)

// upSection is the part of a goose migration before "-- +goose Down".
func upSection(src string) string {
	if i := strings.Index(src, "-- +goose Down"); i >= 0 {
		return src[:i]
	}
	return src
}

// functionBodies adds the body of each CREATE FUNCTION in src to out and removes each function
// that src drops, in the order src says so.
func functionBodies(src string, out map[form]string) error {
	for {
		m := createFunction.FindStringSubmatchIndex(src)
		d := dropFunction.FindStringSubmatchIndex(src)
		if d != nil && (m == nil || d[0] < m[0]) {
			nargs, n := countArgs(src[d[1]-1:])
			delete(out, form{strings.ToLower(src[d[2]:d[3]]), nargs})
			src = src[d[1]-1+n:]
			continue
		}
		if m == nil {
			return nil
		}
		fn := strings.ToLower(src[m[2]:m[3]])
		nargs, _ := countArgs(src[m[1]-1:])
		rest := src[m[1]:]
		open := strings.Index(rest, BodyTag)
		if open < 0 {
			return fmt.Errorf("function %s: body is not quoted with %s", fn, BodyTag)
		}
		// Another CREATE FUNCTION before the tag means this one was quoted otherwise.
		if next := createFunction.FindStringIndex(rest[:open]); next != nil {
			return fmt.Errorf("function %s: body is not quoted with %s", fn, BodyTag)
		}
		body := rest[open+len(BodyTag):]
		end := strings.Index(body, BodyTag)
		if end < 0 {
			return fmt.Errorf("function %s: no closing %s", fn, BodyTag)
		}
		out[form{fn, nargs}] = body[:end]
		src = body[end+len(BodyTag):]
	}
}

// LiveFunctionBodies reads the bodies (pg_proc.prosrc) of the named functions from the database's
// current schema. A name missing from the result is not defined there; a name defined in several
// forms (overloads) maps to their bodies joined, fewest arguments first, as ShippedFunctionBodies
// gives them, so a stale or extra overload shows as a difference. Forms with as many arguments
// (argument types differ) are joined in the order PostgreSQL created them: a binary that is rolled
// back to, and meets an overload a later migration added, reports a difference, not an error.
func LiveFunctionBodies(ctx context.Context, db DBTX, names []string) (map[string]string, error) {
	rows, err := db.Query(ctx, SQL("LiveFunctionBodies"), names)
	if err != nil {
		return nil, fmt.Errorf("read function bodies: %w", err)
	}
	type fn struct {
		Name  string `db:"proname"`
		Nargs int    `db:"pronargs"`
		Body  string `db:"prosrc"`
	}
	fns, err := pgx.CollectRows(rows, pgx.RowToStructByName[fn])
	if err != nil {
		return nil, fmt.Errorf("read function bodies: %w", err)
	}
	forms := make(map[form]string, len(fns))
	for _, f := range fns {
		k := form{f.Name, f.Nargs}
		if prev, dup := forms[k]; dup {
			forms[k] = prev + overloadSeparator + f.Body
			continue
		}
		forms[k] = f.Body
	}
	return joinForms(forms), nil
}

// Forms counts the forms (overloads) joined in a body ShippedFunctionBodies or LiveFunctionBodies
// gives.
func Forms(body string) int { return strings.Count(body, overloadSeparator) + 1 }

// GuardSetting is a setting that switches a guard off, set where it reaches probectl's sessions
// (GuardSettingsSet).
type GuardSetting struct {
	Role     string `db:"role"`     // "role NAME", "every role" or "this session"
	Database string `db:"database"` // "database NAME" or "every database"
	Setting  string `db:"setting"`  // name=value
	Source   string `db:"source"`   // this session's: where it got it (pg_settings.source); "" for a stored one
}

// GuardSettingsSet reads where a setting that switches a guard off is set for a role or a
// database the current one sees, or in this session: probectl.runs_once = 'checked' anywhere but
// in probe_finish_many (00029) switches off every finish's one-run-per-job check, and
// session_replication_role = 'replica' every trigger.
func GuardSettingsSet(ctx context.Context, db DBTX) ([]GuardSetting, error) {
	set, err := rowsOf[GuardSetting](ctx, db, "GuardSettingsSet")
	if err != nil {
		return nil, fmt.Errorf("read the settings of roles and databases: %w", err)
	}
	return set, nil
}

// GuardTrigger is a trigger the migrations leave on one of probectl's tables: what it runs and
// when, what it holds, and the statement that makes it.
type GuardTrigger struct {
	Table, Name string
	Function    string // the function it executes
	Type        int16  // pg_trigger.tgtype: row or statement, before or after, on which events
	Holds       string // what no longer holds without it, for a person reading verify's items
	Create      string // the statement that makes it, as pg_get_triggerdef gives it, the table unqualified
}

// GuardTriggers are the triggers the migrations leave, in table and name order:
// TestGuardTriggersAreTheMigratedOnes holds them to a migrated database's, statements included.
// Verify compares name, function and type only: a rollback to 00028 makes probe_runs_once again
// without 00029's WHEN, and the text of a WHEN is the server version's to print.
var GuardTriggers = []GuardTrigger{
	{"probe_jobs", "probe_jobs_open", "probe_jobs_open", 29,
		"the open-job queue: layer 4, one open job per server",
		"CREATE TRIGGER probe_jobs_open AFTER INSERT OR DELETE OR UPDATE OF finished_at ON probe_jobs " +
			"FOR EACH ROW EXECUTE FUNCTION probe_jobs_open()"},
	{"probe_rounds", "alert_rounds_end", "alert_rounds_end", 17,
		"the failures a round held, judged when it ends",
		"CREATE TRIGGER alert_rounds_end AFTER UPDATE OF finished_at ON probe_rounds FOR EACH ROW " +
			"WHEN (((old.finished_at IS NULL) AND (new.finished_at IS NOT NULL))) EXECUTE FUNCTION alert_rounds_end()"},
	{"probe_runs", "probe_runs_alert", "probe_runs_alert_batch", 4,
		"the alert states, written with each run",
		"CREATE TRIGGER probe_runs_alert AFTER INSERT ON probe_runs REFERENCING NEW TABLE AS new_runs " +
			"FOR EACH STATEMENT EXECUTE FUNCTION probe_runs_alert_batch()"},
	{"probe_runs", "probe_runs_once", "probe_runs_once", 7,
		"one run per job, for every finish but the batched one",
		"CREATE TRIGGER probe_runs_once BEFORE INSERT ON probe_runs FOR EACH ROW " +
			"WHEN ((current_setting('probectl.runs_once'::text, true) IS DISTINCT FROM 'checked'::text)) " +
			"EXECUTE FUNCTION probe_runs_once()"},
	{"probe_runs", "probe_runs_rollup", "probe_runs_rollup_batch", 4,
		"the rollups, each server's history past retention",
		"CREATE TRIGGER probe_runs_rollup AFTER INSERT ON probe_runs REFERENCING NEW TABLE AS new_runs " +
			"FOR EACH STATEMENT EXECUTE FUNCTION probe_runs_rollup_batch()"},
	{"servers", "alert_states_for_server", "alert_states_for_server", 5,
		"a new server's alert state, without which its runs are not judged",
		"CREATE TRIGGER alert_states_for_server AFTER INSERT ON servers FOR EACH ROW " +
			"EXECUTE FUNCTION alert_states_for_server()"},
}

// LiveTrigger is one trigger a migration made, as the database holds it (LiveTriggers).
type LiveTrigger struct {
	Table    string   `db:"table_name"`
	Name     string   `db:"name"`
	Function string   `db:"function"`
	Type     int16    `db:"type"`
	Create   string   `db:"create"`  // pg_get_triggerdef: the statement that would make it again
	Enabled  bool     `db:"enabled"` // fires in a probectl session: not disabled, not kept for a replica
	OffIn    []string `db:"off_in"`  // its table's partitions whose copy of it is disabled or missing
}

// LiveTriggers reads the triggers a migration made on the tables of probectl's schema.
func LiveTriggers(ctx context.Context, db DBTX) ([]LiveTrigger, error) {
	live, err := rowsOf[LiveTrigger](ctx, db, "LiveTriggers")
	if err != nil {
		return nil, fmt.Errorf("read the triggers: %w", err)
	}
	return live, nil
}

// TablesSchema is the schema of probectl's tables (probe_runs's), quoted for a statement.
func TablesSchema(ctx context.Context, db DBTX) (string, error) {
	c, err := rowOf[struct {
		Schema string `db:"schema"`
	}](ctx, db, "TablesSchema")
	if err != nil {
		return "", fmt.Errorf("read the schema of probectl's tables: %w", err)
	}
	return c.Schema, nil
}
