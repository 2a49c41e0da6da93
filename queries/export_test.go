package queries

// Provider is the migration provider probectl migrates with, for tests that stop at a version.
var Provider = provider
