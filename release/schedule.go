package release

import "time"

// The bounds of a release's schedule (`deploy record --every`), the same as the releases table's
// check (queries/migrations/00008_schedule.sql): a round every 5 seconds at most often (a round
// needs a few seconds to claim, and a tick's checks cost a few queries), once a day at least (the
// longest plan is 12 hours, so a slower schedule would break the promise to check it).
const (
	MinEvery = 5 * time.Second
	MaxEvery = 24 * time.Hour
)
