package alerts

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/queries"
)

// Delivery's retry rule: the first retry 5 s after the first failure, doubling up to an hour
// apart, until the event is GiveUpAfter old.
const (
	FirstRetry  = 5 * time.Second
	MaxBackoff  = time.Hour
	GiveUpAfter = 24 * time.Hour
)

// Backoff is the wait after failed attempt n (1 for the first).
func Backoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 20 {
		return MaxBackoff
	}
	return min(FirstRetry<<(n-1), MaxBackoff)
}

// Deliverer makes delivery attempts and records each.
type Deliverer struct {
	DB     queries.DB
	Sender *Sender
	Log    *slog.Logger
}

// NewDeliverer makes a Deliverer with its own Sender.
func NewDeliverer(db queries.DB, log *slog.Logger) *Deliverer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Deliverer{DB: db, Sender: NewSender(), Log: log}
}

// Result is how one attempt ended.
type Result struct {
	// State is the delivery's state after the attempt: pending (to be retried at Next), delivered
	// or failed (given up). Done reports a delivery that was no longer pending: no attempt made.
	State  string
	Done   bool
	Status int
	Err    string
	Next   time.Time
}

// ErrBusy: another process is attempting the delivery right now.
var ErrBusy = queries.ErrDeliveryBusy

// Lease is how long an attempt holds its delivery: longer than the request (AttemptTimeout) and
// its record (recordTimeout), so that only a deliverer that crashed (or lost its database) loses
// its lease, which the next attempt then takes.
const Lease = AttemptTimeout + 20*time.Second

// The record of an attempt, made even when the attempt's context ended, is tried again on a fresh
// connection while recordTimeout lasts (each try at most recordEach): a database that blinks
// between the receiver's answer and the record loses neither.
const (
	recordTimeout = 10 * time.Second
	recordEach    = 3 * time.Second
)

// record records attempt a of delivery k, with then (the next attempt's schedule) in the same
// transaction, if the attempt still holds its lease (leaseUntil); false: it lost it, nothing was
// recorded. A try that fails on a broken connection is tried again (queries.Retry); a try after
// one whose answer was lost asks whether that one committed (the lease then is freed, by it).
func (d *Deliverer) record(ctx context.Context, k queries.DeliveryKey, a queries.Attempt, leaseUntil time.Time,
	then func(ctx context.Context, tx pgx.Tx) error) (bool, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	var held bool
	tries := 0
	err := queries.Retry(rctx, recordEach, d.Log, "record a delivery attempt", func(ctx context.Context) error {
		tries++
		return queries.InTx(ctx, d.DB, func(tx pgx.Tx) error {
			var err error
			if held, err = queries.RecordAttempt(ctx, tx, k, a, leaseUntil); err != nil {
				return err
			}
			if !held {
				if tries > 1 {
					held, err = queries.AttemptRecorded(ctx, tx, k, a)
				}
				return err
			}
			return then(ctx, tx)
		})
	})
	return held, err
}

// Attempt makes one attempt at one delivery. It leases the delivery (committed at once, so no
// connection or transaction is held during the request), sends, and records the attempt only if
// it still holds the lease: two processes never send the same delivery at once, and a delivery
// recorded as delivered is never sent again. The record is tried again on a fresh connection
// within its budget (a database that blinks loses it not); the one way a receiver that answered
// 2xx gets the same webhook-id again is a crash (or a database lost for longer than that budget)
// between its answer and the record: the attempt is then not recorded, and once its lease runs out
// it is made again.
func (d *Deliverer) Attempt(ctx context.Context, k queries.DeliveryKey) (Result, error) {
	return d.attempt(ctx, k, nil)
}

// scheduleRetry makes the next attempt at a delivery at next, in tx, the transaction that records
// the failed attempt before it.
type scheduleRetry func(ctx context.Context, tx pgx.Tx, k queries.DeliveryKey, next time.Time) error

// attempt is Attempt; an attempt that fails and leaves the delivery pending calls retry (when it
// is not nil) in the transaction that records it, so that the record and the next attempt's
// schedule commit together.
func (d *Deliverer) attempt(ctx context.Context, k queries.DeliveryKey, retry scheduleRetry) (Result, error) {
	del, err := queries.ClaimDelivery(ctx, d.DB, k, Lease)
	if err != nil {
		return Result{}, err
	}
	if del.State != "pending" || del.LeaseUntil == nil {
		return Result{State: del.State, Done: true}, nil
	}
	var res Result
	now := time.Now().UTC()
	a := queries.Attempt{Attempt: del.Attempts + 1}
	req, err := build(del, now)
	var ans Answer
	if err == nil {
		ans, err = d.Sender.send(ctx, req)
	}
	res.Status = ans.Status
	if ans.Status != 0 {
		a.StatusCode = &ans.Status
	}
	switch {
	case err == nil && ans.OK():
		res.State = "delivered"
	case err != nil:
		res.Err = SafeError(err)
	default:
		res.Err = fmt.Sprintf("the receiver answered %d %s", ans.Status, http.StatusText(ans.Status))
	}
	if res.Err != "" {
		a.Error = &res.Err
		res.State = "pending"
		res.Next = now.Add(Backoff(a.Attempt))
		if res.Next.Sub(del.CreatedAt) > GiveUpAfter {
			res.State = "failed"
		} else {
			a.NextAttemptAt = &res.Next
		}
	}
	a.State = res.State
	held, err := d.record(ctx, k, a, *del.LeaseUntil, func(ctx context.Context, tx pgx.Tx) error {
		if retry == nil || res.State != "pending" {
			return nil
		}
		return retry(ctx, tx, k, res.Next)
	})
	if err != nil {
		return Result{}, err
	}
	if !held {
		return Result{}, fmt.Errorf("attempt %d of event %s to receiver %d outlived its lease: not recorded: %w",
			a.Attempt, k.EventID, k.ReceiverID, ErrBusy)
	}
	if res.Err != "" {
		d.Log.Warn("alert delivery failed", "event", k.EventID, "receiver", k.ReceiverID, "status", res.Status,
			"err", render.Printable(res.Err), "state", res.State)
	}
	return res, nil
}

// DrainSummary counts what a drain did.
type DrainSummary struct {
	Attempts  int   `json:"attempts"`
	Delivered int   `json:"delivered"`
	Failed    int   `json:"failed"`
	Pending   int64 `json:"pending"`
	Resent    int   `json:"resent"`
}

// maxDrainBatch bounds the deliveries read at once.
const maxDrainBatch = 500

// Drain attempts every delivery due now, once each (of the rounds roundIDs only, when it is not
// nil), and says how many are still pending after it. Draining the whole outbox (roundIDs nil,
// 'alerts deliver') first judges the rounds found dead or recovered since (EmitDeadRounds).
func (d *Deliverer) Drain(ctx context.Context, roundIDs []int64) (DrainSummary, error) {
	var s DrainSummary
	if roundIDs == nil {
		// Without a worker, this is where rounds found dead get their round.dead alert.
		if _, err := EmitDeadRounds(ctx, d.DB); err != nil {
			return s, err
		}
	}
	seen := map[queries.DeliveryKey]bool{}
	for {
		keys, err := queries.PendingDeliveries(ctx, d.DB, roundIDs, nil, maxDrainBatch)
		if err != nil {
			return s, err
		}
		fresh := 0
		for _, k := range keys {
			if seen[k] {
				continue
			}
			seen[k] = true
			fresh++
			res, err := d.Attempt(ctx, k)
			if errors.Is(err, ErrBusy) || errors.Is(err, pgx.ErrNoRows) {
				continue
			}
			if err != nil {
				return s, err
			}
			if res.Done {
				continue
			}
			s.Attempts++
			switch res.State {
			case "delivered":
				s.Delivered++
			case "failed":
				s.Failed++
			}
		}
		if fresh == 0 {
			break
		}
	}
	n, err := queries.CountPendingDeliveries(ctx, d.DB, roundIDs)
	s.Pending = n
	return s, err
}

// maxExpiredPerResend bounds the deliveries with an expired lease that one re-send job attempts;
// the rest wait for the next period.
const maxExpiredPerResend = 20

// drainExpired attempts, once each, the deliveries whose attempt began and was never recorded
// (their deliverer crashed: the lease ran out), so that they do not wait for River to rescue the
// crashed worker's job. An attempt that fails schedules its retry through retry, in the
// transaction that records it: the crashed worker's job, still running in River's eyes, would
// make it only once rescued. It stops starting attempts when ctx ends and returns how many it made.
func (d *Deliverer) drainExpired(ctx context.Context, retry scheduleRetry) (int, error) {
	keys, err := queries.ExpiredLeases(ctx, d.DB, maxExpiredPerResend)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range keys {
		if ctx.Err() != nil {
			break
		}
		res, err := d.attempt(ctx, k, retry)
		if errors.Is(err, ErrBusy) || errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return n, err
		}
		if !res.Done {
			n++
		}
	}
	return n, nil
}

// DrainRound is run round's delivery, when no worker runs them: it judges the earlier rounds
// found dead or recovered since (EmitDeadRounds: a cron user with no worker must hear of a dead
// round too), then delivers round roundID's events and those it just emitted until none is
// pending or the bound passes, waiting out their retries. What is left stays pending for a worker
// or 'alerts deliver'.
func (d *Deliverer) DrainRound(ctx context.Context, roundID int64, bound time.Duration) (DrainSummary, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	rounds := []int64{roundID}
	judged, err := queries.JudgeDeadRounds(ctx, d.DB, MaxDeadRoundsAtOnce)
	if err != nil { // the round's own events still go out
		d.Log.Warn("judging the rounds found dead", "err", err)
	}
	rounds = append(rounds, judged...)
	var total DrainSummary
	for {
		s, err := d.Drain(ctx, rounds)
		total.Attempts += s.Attempts
		total.Delivered += s.Delivered
		total.Failed += s.Failed
		total.Pending = s.Pending
		if err != nil {
			if ctx.Err() != nil {
				return total, nil
			}
			return total, err
		}
		if s.Pending == 0 {
			return total, nil
		}
		select {
		case <-ctx.Done():
			return total, nil
		case <-time.After(time.Second):
		}
	}
}

// Resend posts every open server.down alert to each Alertmanager receiver that takes them, so
// that Alertmanager, which resolves an alert it has not heard of for its resolve_timeout, keeps
// it firing. It returns how many alerts were posted; a receiver that fails is logged and the
// others still get theirs.
func (d *Deliverer) Resend(ctx context.Context) (int, error) {
	open, err := queries.OpenDownAlerts(ctx, d.DB)
	if err != nil {
		return 0, err
	}
	byReceiver := map[int64][]amAlert{}
	urls := map[int64]string{}
	var order []int64
	for _, o := range open {
		if _, ok := byReceiver[o.ReceiverID]; !ok {
			order = append(order, o.ReceiverID)
			urls[o.ReceiverID] = o.ReceiverURL
		}
		slug := o.Slug
		ev := eventOf(queries.Delivery{EventID: o.EventID, Type: TypeServerDown, Slug: &slug, URL: o.URL,
			Kind: o.Kind, Plan: o.Plan, Runs: o.Runs, RoundID: o.RoundID, CreatedAt: o.CreatedAt})
		byReceiver[o.ReceiverID] = append(byReceiver[o.ReceiverID], amAlertOf(ev, nil))
	}
	sent := 0
	var firstErr error
	for _, id := range order {
		body, err := json.Marshal(byReceiver[id])
		if err == nil {
			var ans Answer
			ans, err = d.Sender.send(ctx, request{url: amURL(urls[id]), header: jsonHeader(), body: body})
			if err == nil && !ans.OK() {
				err = fmt.Errorf("the receiver answered %d", ans.Status)
			}
		}
		if err != nil {
			d.Log.Warn("re-sending open alerts failed", "receiver", id, "err", render.Printable(SafeError(err)))
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		sent += len(byReceiver[id])
	}
	return sent, firstErr
}

// Test sends one signed test event to a receiver now and returns its answer; nothing is stored.
func Test(ctx context.Context, db queries.DBTX, s *Sender, name string) (Answer, string, error) {
	r, err := queries.ReceiverByName(ctx, db, name)
	if err != nil {
		return Answer{}, "", err
	}
	id := newEventID()
	req, err := build(queries.Delivery{EventID: id, Type: TypeTest, CreatedAt: time.Now().UTC(),
		Receiver: r.Name, ReceiverURL: r.URL, Format: r.Format, Secret: r.Secret}, time.Now().UTC())
	if err != nil {
		return Answer{}, id, err
	}
	ans, err := s.send(ctx, req)
	return ans, id, err
}

// newEventID is a random (version 4) UUID, for a test event.
func newEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// RoundDeliveryBound bounds how long run round waits to deliver its round's events.
const RoundDeliveryBound = 30 * time.Second
