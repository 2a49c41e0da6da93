package queries

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// StoreToolsParams is one run's tool list and the definitions it saw.
type StoreToolsParams struct {
	ListFingerprint string
	List            json.RawMessage            // [{"name", "fingerprint"}], sorted by name
	Definitions     map[string]json.RawMessage // fingerprint → canonical definition
	Now             *time.Time
}

// StoredTools counts what a StoreTools call added (what was there already is not counted).
type StoredTools struct {
	ListsAdded       int64 `db:"lists_added"`
	DefinitionsAdded int64 `db:"definitions_added"`
}

// StoreTools stores a tool list and its definitions once per fingerprint, in one statement.
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
	out, err := rowOf[StoredTools](ctx, db, "StoreTools", p.ListFingerprint, string(p.List), fps, defs, p.Now)
	if err != nil {
		return StoredTools{}, fmt.Errorf("store tool definitions: %w", err)
	}
	return out, nil
}
