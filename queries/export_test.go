package queries

// Provider is the migration provider probectl migrates with, for tests that stop at a version.
var Provider = provider

// FinishTxArgs are FinishTx's named arguments, for tests that queue the statement themselves.
var FinishTxArgs = finishTxArgs
