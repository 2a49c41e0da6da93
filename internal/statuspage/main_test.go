package statuspage_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/probectl/probectl/internal/dbtest"
	"github.com/probectl/probectl/internal/status/statustest"
	"github.com/probectl/probectl/internal/statuspage"
	"github.com/probectl/probectl/internal/testfactory"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

var migrated = dbtest.NewTemplate("statuspage_tmpl", testfactory.Migrate)

// seeded returns the handler over a database holding the statustest scenario, seen at its Now.
func seeded(t *testing.T) (http.Handler, *pgxpool.Pool, statustest.Scenario) {
	t.Helper()
	pool := migrated.Pool(t)
	sc := statustest.Seed(context.Background(), t, pool)
	h := statuspage.Handler(statuspage.Options{DB: pool, Now: func() time.Time { return statustest.Now }})
	return h, pool, sc
}

type response struct {
	Code   int
	Header http.Header
	Body   string
}

func get(t *testing.T, h http.Handler, path string, header ...string) response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, err := io.ReadAll(rec.Result().Body)
	require.NoError(t, err)
	return response{Code: rec.Code, Header: rec.Result().Header, Body: string(body)}
}
