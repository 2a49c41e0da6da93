package queries_test

import (
	"testing"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/testfactory"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// migrated is a template database with every migration applied; each test clones it.
var migrated = dbtest.NewTemplate("queries_tmpl", testfactory.Migrate)
