package status

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/queries"
)

// WorkersWindow is how far back the report lists workers that stopped or went silent: long
// enough to see one that died, short enough that a fleet's restarts do not bury the live ones.
const WorkersWindow = time.Hour

// QueueWindow is how far back the queue's retried and discarded invocations are counted.
const QueueWindow = 24 * time.Hour

// Worker is one `probectl worker` process, as its own heartbeat (probectl_workers) and River's
// leader election describe it.
type Worker struct {
	ID, Host, Version string
	PID, MaxWorkers   int
	StartedAt         time.Time
	HeartbeatAt       time.Time
	// StoppedAt is set when it stopped cleanly (SIGTERM).
	StoppedAt *time.Time
	// Alive: its last heartbeat is within queries.RoundDeadAfter and it did not stop.
	Alive bool
	// Leader: River elected it to insert the periodic tick that starts scheduled rounds (never
	// set on a standby, which cannot read River's UNLOGGED leader table).
	Leader             bool
	InvocationsRunning int
	// SpoolFiles and SpoolResults are what waits in its machine's spool, which only it can read;
	// SpoolSetAside, the files there set aside for a person to read (what no replay can store).
	SpoolFiles, SpoolResults, SpoolSetAside int
}

// Queue is probectl's invocations in River's queue.
type Queue struct {
	Waiting, Running int
	// Retrying wait for another attempt; Retried and Discarded count the last QueueWindow.
	Retrying, Retried, Discarded int
}

// workers reads the workers and the queue; nil, nil when the database has no River or worker
// tables (migrated by a binary from before them).
func workers(ctx context.Context, tx pgx.Tx, now time.Time) ([]Worker, *Queue, error) {
	tables, err := queries.WorkerTables(ctx, tx)
	if err != nil || !tables.Exist {
		return nil, nil, err
	}
	rows, err := queries.StatusWorkers(ctx, tx, now, queries.RoundDeadAfter, WorkersWindow)
	if err != nil {
		return nil, nil, err
	}
	leader := ""
	if !tables.Standby {
		if leader, err = queries.StatusLeader(ctx, tx, now); err != nil {
			return nil, nil, err
		}
	}
	out := make([]Worker, 0, len(rows))
	for _, w := range rows {
		out = append(out, Worker{ID: w.ID, Host: w.Host, Version: w.Version, PID: w.PID, MaxWorkers: w.MaxWorkers,
			StartedAt: w.StartedAt, HeartbeatAt: w.HeartbeatAt, StoppedAt: w.StoppedAt, Alive: w.Alive,
			Leader: leader != "" && w.ID == leader, InvocationsRunning: w.InvocationsRunning, SpoolFiles: w.SpoolFiles,
			SpoolResults: w.SpoolResults, SpoolSetAside: w.SpoolSetAside})
	}
	q, err := queries.StatusQueue(ctx, tx, now, QueueWindow)
	if err != nil {
		return nil, nil, err
	}
	return out, &Queue{Waiting: q.Waiting, Running: q.Running, Retrying: q.Retrying, Retried: q.Retried,
		Discarded: q.Discarded}, nil
}

type workerJSON struct {
	ID                 string     `json:"id"`
	Host               string     `json:"host"`
	PID                int        `json:"pid"`
	Version            string     `json:"version"`
	Alive              bool       `json:"alive"`
	Leader             bool       `json:"leader"`
	InvocationsRunning int        `json:"invocations_running"`
	MaxWorkers         int        `json:"max_workers"`
	SpoolFiles         int        `json:"spool_files"`
	SpoolResults       int        `json:"spool_results"`
	SpoolSetAside      int        `json:"spool_set_aside"`
	StartedAt          time.Time  `json:"started_at"`
	HeartbeatAt        time.Time  `json:"heartbeat_at"`
	StoppedAt          *time.Time `json:"stopped_at"`
}

type queueJSON struct {
	Waiting      int `json:"waiting"`
	Running      int `json:"running"`
	Retrying     int `json:"retrying"`
	Retried24h   int `json:"retried_24h"`
	Discarded24h int `json:"discarded_24h"`
}

func workersJSON(ws []Worker) []workerJSON {
	out := make([]workerJSON, 0, len(ws))
	for _, w := range ws {
		out = append(out, workerJSON{ID: w.ID, Host: w.Host, PID: w.PID, Version: w.Version, Alive: w.Alive,
			Leader: w.Leader, InvocationsRunning: w.InvocationsRunning, MaxWorkers: w.MaxWorkers,
			SpoolFiles: w.SpoolFiles, SpoolResults: w.SpoolResults, SpoolSetAside: w.SpoolSetAside, StartedAt: w.StartedAt,
			HeartbeatAt: w.HeartbeatAt, StoppedAt: w.StoppedAt})
	}
	return out
}

func queueToJSON(q *Queue) *queueJSON {
	if q == nil {
		return nil
	}
	return &queueJSON{Waiting: q.Waiting, Running: q.Running, Retrying: q.Retrying, Retried24h: q.Retried,
		Discarded24h: q.Discarded}
}

// NoWorkerAlive says invocations wait in the queue (to run, or to be retried) and no worker is
// alive to run them. It is the one rule by which `probectl status` and the status page warn that
// the schedule stands still: a worker that stopped or whose heartbeat went silent runs nothing, so
// only live workers count, whether or not dead ones were heard from.
func (r *Report) NoWorkerAlive() bool {
	if r.Queue == nil || r.Queue.Waiting+r.Queue.Retrying == 0 {
		return false
	}
	for _, w := range r.Workers {
		if w.Alive {
			return false
		}
	}
	return true
}
