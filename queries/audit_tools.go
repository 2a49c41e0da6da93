package queries

import (
	"context"
	"fmt"
	"time"
)

// AuditToolChangeRow is one run whose tool list differs from the server's previous one.
type AuditToolChangeRow struct {
	Server        string    `db:"server"`
	FromRun       int64     `db:"from_run"`
	ToRun         int64     `db:"to_run"`
	At            time.Time `db:"at"`
	ToolsBefore   string    `db:"tools_before"` // [{"name", "fingerprint"}]
	ToolsAfter    string    `db:"tools_after"`
	VersionBefore *string   `db:"version_before"`
	VersionAfter  *string   `db:"version_after"`
}

// AuditToolChanges lists the tool-list changes of runs in [since, until), of one server when
// slug is not empty.
func AuditToolChanges(ctx context.Context, db DBTX, since, until time.Time, slug string) ([]AuditToolChangeRow, error) {
	out, err := rowsOf[AuditToolChangeRow](ctx, db, "AuditToolChanges", since, until, nullIfEmpty(slug))
	if err != nil {
		return nil, fmt.Errorf("read tool changes: %w", err)
	}
	return out, nil
}

// AuditToolPopulationRow counts what the tool audit compared.
type AuditToolPopulationRow struct {
	Servers int64 `db:"servers"`
	Runs    int64 `db:"runs"`
}

// AuditToolPopulation counts the servers and runs with a complete tool list in [since, until).
func AuditToolPopulation(ctx context.Context, db DBTX, since, until time.Time, slug string) (AuditToolPopulationRow, error) {
	out, err := rowOf[AuditToolPopulationRow](ctx, db, "AuditToolPopulation", since, until, nullIfEmpty(slug))
	if err != nil {
		return AuditToolPopulationRow{}, fmt.Errorf("count tool runs: %w", err)
	}
	return out, nil
}

// AuditToolDefinitions returns the stored canonical definitions of fingerprints, by fingerprint.
func AuditToolDefinitions(ctx context.Context, db DBTX, fingerprints []string) (map[string]string, error) {
	defs, err := rowsOf[struct {
		Fingerprint string `db:"fingerprint"`
		Definition  string `db:"definition"`
	}](ctx, db, "AuditToolDefinitions", fingerprints)
	if err != nil {
		return nil, fmt.Errorf("read tool definitions: %w", err)
	}
	out := make(map[string]string, len(defs))
	for _, d := range defs {
		out[d.Fingerprint] = d.Definition
	}
	return out, nil
}
