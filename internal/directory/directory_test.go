package directory_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/testfactory"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var migrated = dbtest.NewTemplate("directory_tmpl", testfactory.Migrate)

func row(line int, slug, plan string) directory.Row {
	return directory.Row{Line: line, Entry: directory.Entry{
		Slug: slug, URL: "https://" + slug + ".example/mcp", Kind: "mcp", Plan: plan,
	}}
}

func TestImportIntoABrokenDatabaseCouldNotWorkRatherThanBlamingARow(t *testing.T) {
	t.Parallel()
	pool := dbtest.Pool(t, dbtest.NewEmptyDB(t)) // no schema: the servers table is missing

	_, err := directory.Import(t.Context(), pool, []directory.Row{row(2, "weather", "standard")}, nil, false)
	require.Error(t, err)
	var le *directory.LineError
	require.False(t, errors.As(err, &le), "no line is at fault: %v", err)
	require.Equal(t, exit.Unavailable, exit.Code(err), "%v", err)
}

func TestImportOfARowThePostgreSQLRefusesNamesTheLineAndIsBadInput(t *testing.T) {
	t.Parallel()
	pool := dbtest.Pool(t, migrated.NewDB(t))

	// An unknown plan gets no interval, which the servers table's check constraint refuses (class
	// 23); Parse would have caught it, so build the rows directly.
	rows := []directory.Row{row(2, "weather", "standard"), row(3, "hourly", "hourly")}
	_, err := directory.Import(t.Context(), pool, rows, nil, false)
	var le *directory.LineError
	require.ErrorAs(t, err, &le)
	require.Equal(t, 3, le.Line)
	require.Equal(t, exit.Usage, exit.Code(err), "%v", err)
}
