// Package queries owns everything probectl says to PostgreSQL: the schema migrations, the SQL
// (in .sql files next to this one, one named query per block), thin typed wrappers around it, and
// connection setup. Domain packages call these wrappers; no SQL lives anywhere else.
//
// Wrappers take a DBTX, so the same call works on a pool, a connection or a transaction.
package queries
