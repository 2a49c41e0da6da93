package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/queries"
)

// FlagChangedWithoutVersionBump marks a tool-list change while the server's version stayed the
// same: what a rug pull looks like from outside.
const FlagChangedWithoutVersionBump = "changed_without_version_bump"

// ToolsParams choose the runs the tool audit looks at: those finished in [Since, Until).
type ToolsParams struct {
	Since time.Time // required
	Until time.Time // zero: the database's now()
	// Server, when set, is the one server (slug) to look at.
	Server string
	// Diff adds a changed description's old and new text.
	Diff bool
}

// ToolChange is one change of a server's tool list between two consecutive complete lists.
type ToolChange struct {
	Server        string
	FromRun       int64
	ToRun         int64
	At            time.Time
	Added         []string
	Removed       []string
	Changed       []ChangedTool
	VersionBefore *string
	VersionAfter  *string
	// Flag is FlagChangedWithoutVersionBump or "".
	Flag string
}

// ChangedTool is a tool whose definition changed: which top-level fields differ, and, with
// ToolsParams.Diff, its description before and after. Fields is ["unknown"] when a definition
// was not stored (its run's storage failed).
type ChangedTool struct {
	Name              string
	Fields            []string
	DescriptionBefore *string
	DescriptionAfter  *string
}

// ToolsReport is the answer to "did any server change its tools, and did it say so?".
type ToolsReport struct {
	Since, Until time.Time
	Server       string
	// Servers and Runs count what had a complete tool list in the window.
	Servers, Runs int64
	Changes       []ToolChange
}

// Flagged counts the changes made without a version bump.
func (r ToolsReport) Flagged() int {
	n := 0
	for _, c := range r.Changes {
		if c.Flag != "" {
			n++
		}
	}
	return n
}

// Tools runs the tool-drift audit in its own READ ONLY, REPEATABLE READ transaction.
func Tools(ctx context.Context, db queries.DB, p ToolsParams) (*ToolsReport, error) {
	return readOnly(ctx, db, func(tx pgx.Tx) (*ToolsReport, error) { return ToolsTx(ctx, tx, p) })
}

// ToolsTx runs the tool-drift audit inside the caller's READ ONLY transaction.
func ToolsTx(ctx context.Context, tx pgx.Tx, p ToolsParams) (*ToolsReport, error) {
	since, until, err := enterWindow(ctx, tx, p.Since, p.Until)
	if err != nil {
		return nil, err
	}
	// A slug no server has is a typo, not a server without changes (queries.ErrNoServer).
	if p.Server != "" {
		if _, err := queries.GetServerBySlug(ctx, tx, p.Server); err != nil {
			return nil, err
		}
	}
	pop, err := queries.AuditToolPopulation(ctx, tx, since, until, p.Server)
	if err != nil {
		return nil, err
	}
	rows, err := queries.AuditToolChanges(ctx, tx, since, until, p.Server)
	if err != nil {
		return nil, err
	}
	r := &ToolsReport{Since: since, Until: until, Server: p.Server, Servers: pop.Servers, Runs: pop.Runs,
		Changes: make([]ToolChange, 0, len(rows))}
	for _, row := range rows {
		c, err := diffLists(ctx, tx, row, p.Diff)
		if err != nil {
			return nil, err
		}
		r.Changes = append(r.Changes, c)
	}
	return r, nil
}

type toolPrint struct {
	Name        string `json:"name"`
	Fingerprint string `json:"fingerprint"`
}

// diffLists compares two runs' lists by tool name, then the changed tools' stored definitions
// field by field.
func diffLists(ctx context.Context, tx pgx.Tx, row queries.AuditToolChangeRow, withText bool) (ToolChange, error) {
	c := ToolChange{Server: row.Server, FromRun: row.FromRun, ToRun: row.ToRun, At: row.At.UTC(),
		Added: []string{}, Removed: []string{}, Changed: []ChangedTool{},
		VersionBefore: row.VersionBefore, VersionAfter: row.VersionAfter}
	if deref(row.VersionBefore) == deref(row.VersionAfter) {
		c.Flag = FlagChangedWithoutVersionBump
	}
	before, after := printsByName(row.ToolsBefore), printsByName(row.ToolsAfter)
	var pairs [][2]string
	for name, fp := range after {
		old, ok := before[name]
		switch {
		case !ok:
			c.Added = append(c.Added, name)
		case old != fp:
			pairs = append(pairs, [2]string{name, ""})
		}
	}
	for name := range before {
		if _, ok := after[name]; !ok {
			c.Removed = append(c.Removed, name)
		}
	}
	slices.Sort(c.Added)
	slices.Sort(c.Removed)
	if len(pairs) == 0 {
		return c, nil
	}
	fps := make([]string, 0, 2*len(pairs))
	for _, p := range pairs {
		fps = append(fps, before[p[0]], after[p[0]])
	}
	defs, err := queries.AuditToolDefinitions(ctx, tx, fps)
	if err != nil {
		return c, err
	}
	for _, p := range pairs {
		name := p[0]
		c.Changed = append(c.Changed, changedTool(name, defs[before[name]], defs[after[name]], withText))
	}
	slices.SortFunc(c.Changed, func(a, b ChangedTool) int { return strings.Compare(a.Name, b.Name) })
	return c, nil
}

func changedTool(name, before, after string, withText bool) ChangedTool {
	ct := ChangedTool{Name: name}
	var a, b map[string]json.RawMessage
	if before == "" || after == "" || json.Unmarshal([]byte(before), &a) != nil || json.Unmarshal([]byte(after), &b) != nil {
		ct.Fields = []string{"unknown"}
		return ct
	}
	for _, field := range []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"} {
		if !jsonEqual(a[field], b[field]) {
			ct.Fields = append(ct.Fields, field)
		}
	}
	if withText && slices.Contains(ct.Fields, "description") {
		ct.DescriptionBefore, ct.DescriptionAfter = text(a["description"]), text(b["description"])
	}
	return ct
}

// jsonEqual compares two JSON values by meaning (jsonb reorders keys).
func jsonEqual(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ca, _ := json.Marshal(x)
	cb, _ := json.Marshal(y)
	return string(ca) == string(cb)
}

func text(raw json.RawMessage) *string {
	s := ""
	if raw != nil {
		if err := json.Unmarshal(raw, &s); err != nil {
			s = fmt.Sprintf("%s", raw)
		}
	}
	return &s
}

func printsByName(raw string) map[string]string {
	var prints []toolPrint
	_ = json.Unmarshal([]byte(raw), &prints) // written by the checker; an unreadable list compares as empty
	out := make(map[string]string, len(prints))
	for _, p := range prints {
		out[p.Name] = p.Fingerprint
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

type changedToolJSON struct {
	Name              string   `json:"name"`
	Fields            []string `json:"fields"`
	DescriptionBefore *string  `json:"description_before,omitempty"`
	DescriptionAfter  *string  `json:"description_after,omitempty"`
}

type toolChangeJSON struct {
	Server        string            `json:"server"`
	FromRun       int64             `json:"from_run"`
	ToRun         int64             `json:"to_run"`
	At            time.Time         `json:"at"`
	Added         []string          `json:"added"`
	Removed       []string          `json:"removed"`
	Changed       []changedToolJSON `json:"changed"`
	VersionBefore *string           `json:"version_before"`
	VersionAfter  *string           `json:"version_after"`
	Flag          *string           `json:"flag"`
}

type toolsJSON struct {
	Population struct {
		Since   time.Time `json:"since"`
		Until   time.Time `json:"until"`
		Server  *string   `json:"server"`
		Servers int64     `json:"servers"`
		Runs    int64     `json:"runs"`
	} `json:"population"`
	Flagged int              `json:"flagged"`
	Changes []toolChangeJSON `json:"changes"`
}

// MarshalJSON writes the documented shape (docs/audit.md).
func (r ToolsReport) MarshalJSON() ([]byte, error) {
	var out toolsJSON
	out.Population.Since, out.Population.Until = r.Since.UTC(), r.Until.UTC()
	if r.Server != "" {
		out.Population.Server = &r.Server
	}
	out.Population.Servers, out.Population.Runs = r.Servers, r.Runs
	out.Flagged = r.Flagged()
	out.Changes = make([]toolChangeJSON, 0, len(r.Changes))
	for _, c := range r.Changes {
		j := toolChangeJSON{Server: c.Server, FromRun: c.FromRun, ToRun: c.ToRun, At: c.At.UTC(),
			Added: c.Added, Removed: c.Removed, Changed: make([]changedToolJSON, 0, len(c.Changed)),
			VersionBefore: c.VersionBefore, VersionAfter: c.VersionAfter}
		if c.Flag != "" {
			flag := c.Flag
			j.Flag = &flag
		}
		for _, ct := range c.Changed {
			j.Changed = append(j.Changed, changedToolJSON(ct))
		}
		out.Changes = append(out.Changes, j)
	}
	return json.Marshal(out)
}
