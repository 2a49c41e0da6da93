package queries

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Every wrapper reads its rows by column name into one Go type per row shape (a struct whose
// fields carry `db:"column"` tags), never by position: pgx.RowToStructByName matches each column
// of the query to a field, and fails when one has no match. A query's column order is then free,
// and a column added to the SELECT without its field is an error, not a shifted scan.

// collect runs a named query and collects its rows by name; errors name the query.
func collect[T any](ctx context.Context, db DBTX, name string, args ...any) ([]T, error) {
	out, err := rowsOf[T](ctx, db, name, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// rowsOf runs a named query and collects its rows by name.
func rowsOf[T any](ctx context.Context, db DBTX, name string, args ...any) ([]T, error) {
	rows, err := db.Query(ctx, SQL(name), args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[T])
}

// rowOf runs a named query and reads its first row by name; pgx.ErrNoRows when it has none.
func rowOf[T any](ctx context.Context, db DBTX, name string, args ...any) (T, error) {
	rows, err := db.Query(ctx, SQL(name), args...)
	if err != nil {
		var zero T
		return zero, err
	}
	return pgx.CollectOneRow(rows, pgx.RowToStructByName[T])
}

// valueOf runs a named query that returns one column and reads it from its first row;
// pgx.ErrNoRows when it has none.
func valueOf[T any](ctx context.Context, db DBTX, name string, args ...any) (T, error) {
	rows, err := db.Query(ctx, SQL(name), args...)
	if err != nil {
		var zero T
		return zero, err
	}
	return pgx.CollectOneRow(rows, pgx.RowTo[T])
}
