package alerts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/probectl/probectl/queries"
)

// River's part: the delivery jobs that probe_runs_alert inserts (river_job, kind
// probectl_alert_delivery, queue probectl_alerts) and the periodic re-send to Alertmanager.
const (
	// Queue is the River queue of deliveries, apart from the invocations' so that a long round
	// never holds an alert back.
	Queue = "probectl_alerts"
	// MaxWorkers is how many deliveries a worker process makes at once. An attempt holds no
	// connection during its request, but its claim and record take one each: kept small so that
	// deliveries to slow receivers never starve the invocations of the pool's connections.
	MaxWorkers = 4
	// MaxAttempts is River's bound, above what GiveUpAfter allows (about 34 attempts).
	MaxAttempts = 100
	// busyWait: a delivery another process is attempting is looked at again this much later.
	busyWait = 5 * time.Second
	// resendReadTimeout bounds the read of the policy's re-send period by River's scheduler.
	resendReadTimeout = 2 * time.Second
)

// DeliveryArgs is one delivery as a River job; the trigger writes the same JSON.
type DeliveryArgs struct {
	EventID    string `json:"event_id"`
	ReceiverID int64  `json:"receiver_id"`
}

// Kind is the River job kind of a delivery.
func (DeliveryArgs) Kind() string { return "probectl_alert_delivery" }

// InsertOpts: the alerts' queue.
func (DeliveryArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: MaxAttempts}
}

type resendArgs struct{}

func (resendArgs) Kind() string { return "probectl_alert_resend" }

func (resendArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: Queue, MaxAttempts: 1}
}

type deliveryWorker struct {
	river.WorkerDefaults[DeliveryArgs]
	d *Deliverer
}

// Timeout: one attempt, and the transaction that records it.
func (w *deliveryWorker) Timeout(*river.Job[DeliveryArgs]) time.Duration {
	return Lease
}

// NextRetry follows the delivery's backoff.
func (w *deliveryWorker) NextRetry(j *river.Job[DeliveryArgs]) time.Time {
	return time.Now().Add(Backoff(j.Attempt))
}

func (w *deliveryWorker) Work(ctx context.Context, j *river.Job[DeliveryArgs]) error {
	res, err := w.d.Attempt(ctx, queries.DeliveryKey{EventID: j.Args.EventID, ReceiverID: j.Args.ReceiverID})
	switch {
	case errors.Is(err, ErrBusy):
		return river.JobSnooze(busyWait)
	case errors.Is(err, pgx.ErrNoRows):
		return river.JobCancel(fmt.Errorf("no delivery of event %s to receiver %d", j.Args.EventID, j.Args.ReceiverID))
	case err != nil:
		return err
	case res.State == "pending":
		return fmt.Errorf("attempt failed: %s", res.Err)
	case res.State == "failed":
		return river.JobCancel(fmt.Errorf("gave up after %s: %s", GiveUpAfter, res.Err))
	}
	return nil
}

type resendWorker struct {
	river.WorkerDefaults[resendArgs]
	d *Deliverer
}

// Timeout: the re-send, then the deliveries left by a crashed deliverer (expiredBound).
func (w *resendWorker) Timeout(*river.Job[resendArgs]) time.Duration {
	return 2*AttemptTimeout + expiredBound + recordTimeout
}

// expiredBound bounds the re-send job's attempts at deliveries whose lease ran out.
const expiredBound = time.Minute

// Work re-sends the open alerts to Alertmanager, then attempts the deliveries whose lease ran out
// without a record (their worker crashed mid-attempt): River would rescue that worker's job only
// after RescueStuckJobsAfter. Such an attempt that fails inserts the delivery's next attempt, a
// River job scheduled at its backoff, in the transaction that records it.
func (w *resendWorker) Work(ctx context.Context, _ *river.Job[resendArgs]) error {
	_, err := w.d.Resend(ctx)
	if err != nil {
		w.d.Log.Warn("re-sending open alerts", "err", SafeError(err))
	}
	ectx, cancel := context.WithTimeout(ctx, expiredBound)
	defer cancel()
	if _, err := w.d.drainExpired(ectx, retryJob(river.ClientFromContext[pgx.Tx](ctx))); err != nil && ectx.Err() == nil {
		w.d.Log.Warn("attempting deliveries left by a crashed deliverer", "err", SafeError(err))
	}
	return nil // the next period sends again
}

// retryJob schedules a delivery's next attempt as a River delivery job at next, in tx.
func retryJob(c *river.Client[pgx.Tx]) scheduleRetry {
	return func(ctx context.Context, tx pgx.Tx, k queries.DeliveryKey, next time.Time) error {
		_, err := c.InsertTx(ctx, tx, DeliveryArgs{EventID: k.EventID, ReceiverID: k.ReceiverID},
			&river.InsertOpts{ScheduledAt: next})
		if err != nil {
			return fmt.Errorf("schedule the next attempt of event %s to receiver %d: %w", k.EventID, k.ReceiverID, err)
		}
		return nil
	}
}

// resendSchedule runs the re-send every resend_every of the policy, read when River asks for the
// next time, so a policy change takes effect at the next re-send.
type resendSchedule struct {
	db   queries.DBTX
	mu   sync.Mutex
	last time.Duration
}

func (s *resendSchedule) Next(t time.Time) time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), resendReadTimeout)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, err := queries.ReadAlertPolicy(ctx, s.db); err == nil {
		s.last = p.ResendEvery
	}
	if s.last < MinResendEvery {
		s.last = time.Minute
	}
	return t.Add(s.last)
}

// River adds the alerts' workers to a River client's workers and returns the periodic re-send
// job and the queue to add to its configuration (probe/worker does).
func River(workers *river.Workers, db queries.DB, log *slog.Logger) (*river.PeriodicJob, river.QueueConfig) {
	d := NewDeliverer(db, log)
	river.AddWorker(workers, &deliveryWorker{d: d})
	river.AddWorker(workers, &resendWorker{d: d})
	job := river.NewPeriodicJob(&resendSchedule{db: db},
		func() (river.JobArgs, *river.InsertOpts) { return resendArgs{}, nil },
		&river.PeriodicJobOpts{ID: "probectl_alert_resend", RunOnStart: true})
	return job, river.QueueConfig{MaxWorkers: MaxWorkers}
}
