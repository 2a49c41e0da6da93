package main

import (
	"strings"

	"github.com/probectl/probectl/queries"
)

// resolveURL picks the database URL in the documented order: the flag, PROBECTL_DATABASE_URL,
// DATABASE_URL, and else "" (which lets pgx read the libpq PG* variables).
func resolveURL(flag string, getenv func(string) string) (string, queries.URLSource) {
	if flag != "" {
		return flag, "--database-url"
	}
	for _, name := range []string{"PROBECTL_DATABASE_URL", "DATABASE_URL"} {
		if v := getenv(name); v != "" {
			return v, queries.URLSource(name)
		}
	}
	return libpqEnvDSN(getenv), "PG* environment variables"
}

// resolveReadURL picks where the commands that only read connect: the flag, else
// PROBECTL_READ_DATABASE_URL, else "" (the same database as every other command).
func resolveReadURL(flag string, getenv func(string) string) (string, queries.URLSource) {
	if flag != "" {
		return flag, "--read-database-url"
	}
	if v := getenv("PROBECTL_READ_DATABASE_URL"); v != "" {
		return v, "PROBECTL_READ_DATABASE_URL"
	}
	return "", ""
}

// libpqEnvDSN turns the libpq PG* variables into a keyword/value connection string. pgx would read
// them from the process environment itself; reading them through getenv keeps the order of
// precedence in one place and lets tests supply their own environment.
func libpqEnvDSN(getenv func(string) string) string {
	vars := []struct{ env, key string }{
		{"PGHOST", "host"}, {"PGPORT", "port"}, {"PGDATABASE", "dbname"}, {"PGUSER", "user"},
		{"PGPASSWORD", "password"}, {"PGPASSFILE", "passfile"}, {"PGSSLMODE", "sslmode"},
		{"PGSSLCERT", "sslcert"}, {"PGSSLKEY", "sslkey"}, {"PGSSLROOTCERT", "sslrootcert"},
		{"PGCONNECT_TIMEOUT", "connect_timeout"}, {"PGAPPNAME", "application_name"},
		{"PGTARGETSESSIONATTRS", "target_session_attrs"},
	}
	var parts []string
	for _, v := range vars {
		if val := getenv(v.env); val != "" {
			quoted := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(val)
			parts = append(parts, v.key+"='"+quoted+"'")
		}
	}
	return strings.Join(parts, " ")
}
