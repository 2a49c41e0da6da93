// Package pgutc makes every timestamptz a connection scans come back in UTC.
//
// pgx returns a scanned timestamptz in time.Local (binary format) or in the session's TimeZone
// offset (text format), so code used to convert every value it read. Registering the codec
// once, when a connection opens, puts that in one place: queries.Connect and the test pools of
// internal/dbtest set AfterConnect. The instant never changes, only its location.
package pgutc

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Register makes m scan timestamptz in UTC (arrays too: their elements are planned through m).
func Register(m *pgtype.Map) {
	m.RegisterType(&pgtype.Type{Name: "timestamptz", OID: pgtype.TimestamptzOID, Codec: &pgtype.TimestamptzCodec{ScanLocation: time.UTC}})
}

// AfterConnect registers the codec on a new connection; it has the shape of
// pgxpool.Config.AfterConnect.
func AfterConnect(_ context.Context, conn *pgx.Conn) error {
	Register(conn.TypeMap())
	return nil
}
