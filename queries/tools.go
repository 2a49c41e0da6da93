package queries

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// StoreToolsParams is one run's tool list and the definitions it saw.
type StoreToolsParams struct {
	// ServerID is the server whose check saw them; DayBudget the bytes of new definitions it may
	// store per day (UTC).
	ServerID        int64
	DayBudget       int64
	ListFingerprint string
	List            json.RawMessage            // [{"name", "fingerprint"}], sorted by name
	Definitions     map[string]json.RawMessage // fingerprint → canonical definition
	Now             *time.Time
}

// StoredTools counts what a StoreTools call added (what was there already is not counted), and the
// new definitions it left out because the server's day had no room for them.
type StoredTools struct {
	ListsAdded       int64 `db:"lists_added"`
	DefinitionsAdded int64 `db:"definitions_added"`
	DefinitionsCut   int64 `db:"definitions_cut"`
	// ListsCut is 1 when the list was new and the server's day had no room for it: not stored.
	ListsCut int64 `db:"lists_cut"`
}

// StoreTools stores a tool list and its definitions once per fingerprint, in one statement, the
// definitions within the server's budget of the day.
func StoreTools(ctx context.Context, db DBTX, p StoreToolsParams) (StoredTools, error) {
	fps := make([]string, 0, len(p.Definitions))
	for fp := range p.Definitions {
		fps = append(fps, fp)
	}
	slices.Sort(fps) // a stable order takes the rows' locks in the same order in every run
	defs := make([]string, len(fps))
	for i, fp := range fps {
		defs[i] = string(p.Definitions[fp])
	}
	out, err := rowOf[StoredTools](ctx, db, "StoreTools", pgx.NamedArgs{
		"server_id": p.ServerID, "day_budget": p.DayBudget, "list_fingerprint": p.ListFingerprint, "list": string(p.List),
		"fingerprints": fps, "definitions": defs, "now": p.Now,
	})
	if err != nil {
		return StoredTools{}, fmt.Errorf("store tool definitions: %w", err)
	}
	return out, nil
}
