-- +goose Up
-- The claim walks the due servers by one index, whatever the statistics (issue 25: a cheaper
-- claim).
--
-- servers_due_idx (00001, on next_check_at) has been redundant since 00009 made
-- servers_due_order_idx (on next_check_at, id, for the same active servers): every read it served,
-- the second serves in the same order. It was worse than redundant. The servers of one import
-- share one next_check_at; once a round has leased some of them (their next_check_at moved
-- apart), an ANALYZE (the autovacuum's, mid-round) has the planner cost servers_due_idx with an
-- incremental sort above it as the cheaper walk, and that walk reads every due server of the
-- shared time to sort them before it takes its limit. The claim runs on a plan kept for its
-- session (00025), so a session that planned then walked so for the rest of the round: under
-- BenchmarkThroughput (10,000 servers), 240 of the 385 claims slower than 8 ms read ~4,700 due
-- servers each for the 17 they took (auto_explain); queries/claim_plan_test.go reproduces it (5,000
-- read for 17) and fails with the index back.
--
-- It also cost a write: neither the lease nor the finish's advance is a HOT update (next_check_at
-- is indexed), so every check inserted an entry into each index of servers twice; one index
-- fewer is two index entries fewer per check.
--
-- Rollback-safe: nothing names the index, and the previous binary's reads of the due servers
-- (its claim is probe_claim_due, whose body this does not change) use servers_due_order_idx.
-- Down builds it again.
DROP INDEX servers_due_idx;

-- +goose Down
CREATE INDEX servers_due_idx ON servers (next_check_at) WHERE status = 'active';
