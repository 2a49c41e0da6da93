package queries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// AlertPolicy is the directory-wide alert policy (one row of alert_policy).
type AlertPolicy struct {
	DownAfter   int           `db:"down_after"`
	UpAfter     int           `db:"up_after"`
	StormShare  int           `db:"storm_share"`
	StormMin    int           `db:"storm_min"`
	ResendEvery time.Duration `db:"resend_every"`
	UpdatedAt   time.Time     `db:"updated_at"`
	UpdatedBy   string        `db:"updated_by"`
}

// ReadAlertPolicy reads the policy.
func ReadAlertPolicy(ctx context.Context, db DBTX) (AlertPolicy, error) {
	p, err := rowOf[AlertPolicy](ctx, db, "AlertPolicy")
	if err != nil {
		return AlertPolicy{}, fmt.Errorf("read the alert policy: %w", err)
	}
	return p, nil
}

// SetAlertPolicy writes the policy (bounded by the table's checks too) and returns it as stored.
func SetAlertPolicy(ctx context.Context, db DBTX, p AlertPolicy) (AlertPolicy, error) {
	out, err := rowOf[AlertPolicy](ctx, db, "SetAlertPolicy", pgx.NamedArgs{"down_after": p.DownAfter,
		"up_after": p.UpAfter, "storm_share": p.StormShare, "storm_min": p.StormMin,
		"resend_every": p.ResendEvery, "updated_by": p.UpdatedBy})
	if err != nil {
		return AlertPolicy{}, fmt.Errorf("set the alert policy: %w", err)
	}
	return out, nil
}

// Receiver is a receiver as listed: never its secret.
type Receiver struct {
	ID        int64     `db:"id"`
	Name      string    `db:"name"`
	URL       string    `db:"url"`
	Format    string    `db:"format"`
	HasSecret bool      `db:"has_secret"`
	Events    []string  `db:"events"`
	CreatedAt time.Time `db:"created_at"`
}

// ReceiverSecret is a receiver with its secret, for sending to it.
type ReceiverSecret struct {
	ID     int64    `db:"id"`
	Name   string   `db:"name"`
	URL    string   `db:"url"`
	Format string   `db:"format"`
	Secret string   `db:"secret"`
	Events []string `db:"events"`
}

// ErrReceiverExists: a receiver of that name is registered already.
var ErrReceiverExists = errors.New("a receiver of that name exists")

// ErrNoSuchReceiver: no receiver of that name is registered.
var ErrNoSuchReceiver = errors.New("no receiver of that name")

// AddReceiver registers a receiver; secret "" stores none.
func AddReceiver(ctx context.Context, db DBTX, r ReceiverSecret, by string) (int64, error) {
	var secret *string
	if r.Secret != "" {
		secret = &r.Secret
	}
	id, err := valueOf[int64](ctx, db, "AddReceiver", pgx.NamedArgs{"name": r.Name, "url": r.URL,
		"format": r.Format, "secret": secret, "events": r.Events, "created_by": by})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return 0, fmt.Errorf("add receiver %s: %w", r.Name, ErrReceiverExists)
	}
	if err != nil {
		return 0, fmt.Errorf("add receiver %s: %w", r.Name, err)
	}
	return id, nil
}

// ListReceivers lists the receivers, by name.
func ListReceivers(ctx context.Context, db DBTX) ([]Receiver, error) {
	return collect[Receiver](ctx, db, "ListReceivers")
}

// ReceiverByName reads one receiver with its secret; ErrNoSuchReceiver if there is none.
func ReceiverByName(ctx context.Context, db DBTX, name string) (ReceiverSecret, error) {
	r, err := rowOf[ReceiverSecret](ctx, db, "ReceiverByName", pgx.NamedArgs{"name": name})
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("receiver %s: %w", name, ErrNoSuchReceiver)
	}
	if err != nil {
		return r, fmt.Errorf("read receiver %s: %w", name, err)
	}
	return r, nil
}

type removedRow struct {
	ID    int64 `db:"id"`
	Ended int64 `db:"ended"`
}

// RemoveReceiver removes a receiver and ends its pending deliveries as failed, returning how many.
func RemoveReceiver(ctx context.Context, db DBTX, name string) (int64, error) {
	r, err := rowOf[removedRow](ctx, db, "RemoveReceiver", pgx.NamedArgs{"name": name})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("remove receiver %s: %w", name, ErrNoSuchReceiver)
	}
	if err != nil {
		return 0, fmt.Errorf("remove receiver %s: %w", name, err)
	}
	return r.Ended, nil
}

// DeliveryKey names one delivery: an event to a receiver.
type DeliveryKey struct {
	EventID    string `db:"event_id" json:"event_id"`
	ReceiverID int64  `db:"receiver_id" json:"receiver_id"`
}

// PendingDeliveries lists up to limit deliveries due at now (nil: the database's clock), of the
// rounds roundIDs only when it is not nil.
func PendingDeliveries(ctx context.Context, db DBTX, roundIDs []int64, now *time.Time, limit int) ([]DeliveryKey, error) {
	return collect[DeliveryKey](ctx, db, "PendingDeliveries", pgx.NamedArgs{"round_ids": roundIDs, "now": now, "limit": limit})
}

// CountPendingDeliveries counts the deliveries not yet done, of the rounds roundIDs only when it is
// not nil.
func CountPendingDeliveries(ctx context.Context, db DBTX, roundIDs []int64) (int64, error) {
	n, err := valueOf[int64](ctx, db, "CountPendingDeliveries", pgx.NamedArgs{"round_ids": roundIDs})
	if err != nil {
		return 0, fmt.Errorf("count pending deliveries: %w", err)
	}
	return n, nil
}

// Delivery is one leased delivery and everything its payload is made of.
type Delivery struct {
	EventID       string          `db:"event_id"`
	ReceiverID    int64           `db:"receiver_id"`
	State         string          `db:"state"`
	Attempts      int             `db:"attempts"`
	Type          string          `db:"type"`
	ServerID      *int64          `db:"server_id"`
	Slug          *string         `db:"slug"`
	URL           string          `db:"url"`
	Kind          string          `db:"kind"`
	Plan          string          `db:"plan"`
	EventState    *string         `db:"event_state"`
	PreviousState *string         `db:"previous_state"`
	Runs          []int64         `db:"runs"`
	RoundID       *int64          `db:"round_id"`
	Data          json.RawMessage `db:"data"`
	CreatedAt     time.Time       `db:"created_at"`
	ResolvedAt    *time.Time      `db:"resolved_at"`
	DownAt        *time.Time      `db:"down_at"`
	LeaseUntil    *time.Time      `db:"lease_until"`
	Receiver      string          `db:"receiver"`
	ReceiverURL   string          `db:"receiver_url"`
	Format        string          `db:"format"`
	Secret        string          `db:"secret"`
}

// ErrDeliveryBusy: another process holds the delivery (it is being attempted).
var ErrDeliveryBusy = errors.New("the delivery is being attempted by another process")

// ClaimDelivery leases one pending delivery for an attempt, for lease, in its own statement (db
// is not held across the attempt). A delivery no longer pending is returned with its State and
// nothing else; one leased or locked by another process is ErrDeliveryBusy; one that does not
// exist is pgx.ErrNoRows.
func ClaimDelivery(ctx context.Context, db DBTX, k DeliveryKey, lease time.Duration) (Delivery, error) {
	args := pgx.NamedArgs{"event_id": k.EventID, "receiver_id": k.ReceiverID}
	d, err := rowOf[Delivery](ctx, db, "ClaimDelivery", pgx.NamedArgs{"event_id": k.EventID,
		"receiver_id": k.ReceiverID, "lease_seconds": lease.Seconds()})
	if errors.Is(err, pgx.ErrNoRows) {
		state, serr := valueOf[string](ctx, db, "DeliveryState", args)
		switch {
		case errors.Is(serr, pgx.ErrNoRows):
			return d, pgx.ErrNoRows
		case serr != nil:
			return d, fmt.Errorf("delivery of event %s to receiver %d: %w", k.EventID, k.ReceiverID, serr)
		case state != "pending":
			return Delivery{EventID: k.EventID, ReceiverID: k.ReceiverID, State: state}, nil
		}
		return d, ErrDeliveryBusy
	}
	if err != nil {
		return d, fmt.Errorf("claim delivery of event %s to receiver %d: %w", k.EventID, k.ReceiverID, err)
	}
	return d, nil
}

// Attempt is one delivery attempt as it ended.
type Attempt struct {
	Attempt    int
	StatusCode *int
	Error      *string
	// State is the delivery's state after it: pending, delivered or failed.
	State string
	// NextAttemptAt, when the state stays pending, is when the next attempt is due.
	NextAttemptAt *time.Time
}

// RecordAttempt records an attempt and the delivery's new state if the attempt still holds its
// lease (leaseUntil, as ClaimDelivery returned it); false: the lease was lost, nothing recorded.
func RecordAttempt(ctx context.Context, db DBTX, k DeliveryKey, a Attempt, leaseUntil time.Time) (bool, error) {
	tag, err := db.Exec(ctx, SQL("RecordAttempt"), pgx.NamedArgs{"event_id": k.EventID, "receiver_id": k.ReceiverID,
		"attempt": a.Attempt, "status_code": a.StatusCode, "error": a.Error, "state": a.State,
		"next_attempt_at": a.NextAttemptAt, "lease_until": leaseUntil})
	if err != nil {
		return false, fmt.Errorf("record attempt %d of event %s to receiver %d: %w", a.Attempt, k.EventID, k.ReceiverID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// AttemptRecorded says whether attempt a of delivery k is recorded, as it ended (its status and
// error): a RecordAttempt tried again after a broken connection asks it when it finds the lease
// freed, to tell an earlier try that committed unheard from a lease lost to another deliverer.
func AttemptRecorded(ctx context.Context, db DBTX, k DeliveryKey, a Attempt) (bool, error) {
	ok, err := valueOf[bool](ctx, db, "AttemptRecorded", pgx.StrictNamedArgs{"event_id": k.EventID,
		"receiver_id": k.ReceiverID, "attempt": a.Attempt, "status_code": a.StatusCode, "error": a.Error})
	if err != nil {
		return false, fmt.Errorf("read attempt %d of event %s to receiver %d: %w", a.Attempt, k.EventID, k.ReceiverID, err)
	}
	return ok, nil
}

// ExpiredLeases lists up to limit pending deliveries whose attempt began and was never recorded.
func ExpiredLeases(ctx context.Context, db DBTX, limit int) ([]DeliveryKey, error) {
	return collect[DeliveryKey](ctx, db, "ExpiredLeases", pgx.NamedArgs{"limit": limit})
}

// OpenDownAlert is a server.down alert still open, for one Alertmanager receiver.
type OpenDownAlert struct {
	EventID     string          `db:"event_id"`
	CreatedAt   time.Time       `db:"created_at"`
	Runs        []int64         `db:"runs"`
	RoundID     *int64          `db:"round_id"`
	Data        json.RawMessage `db:"data"`
	Slug        string          `db:"slug"`
	URL         string          `db:"url"`
	Kind        string          `db:"kind"`
	Plan        string          `db:"plan"`
	ReceiverID  int64           `db:"receiver_id"`
	Receiver    string          `db:"receiver"`
	ReceiverURL string          `db:"receiver_url"`
}

// OpenDownAlerts lists the open server.down alerts per Alertmanager receiver.
func OpenDownAlerts(ctx context.Context, db DBTX) ([]OpenDownAlert, error) {
	return collect[OpenDownAlert](ctx, db, "OpenDownAlerts")
}

// AlertEvent is one event of the outbox as `alerts list` shows it.
type AlertEvent struct {
	ID            string          `db:"id"`
	Seq           int64           `db:"seq"`
	Type          string          `db:"type"`
	Server        *string         `db:"server"`
	State         *string         `db:"state"`
	PreviousState *string         `db:"previous_state"`
	Runs          []int64         `db:"runs"`
	RoundID       *int64          `db:"round_id"`
	Data          json.RawMessage `db:"data"`
	CreatedAt     time.Time       `db:"created_at"`
	ResolvedAt    *time.Time      `db:"resolved_at"`
}

// ListAlertEvents lists events newest first: only open server.down alerts when open, only those
// created since since when it is set.
func ListAlertEvents(ctx context.Context, db DBTX, open bool, since *time.Time, limit int) ([]AlertEvent, error) {
	return collect[AlertEvent](ctx, db, "ListAlertEvents", pgx.NamedArgs{"open": open, "since": since, "limit": limit})
}

// DegradedRound is a round the storm guard judged degraded: at least storm_share per cent of
// its (at least storm_min) checks failed, so its failures counted toward no server's down
// threshold.
type DegradedRound struct {
	RoundID    int64     `db:"round_id"`
	Checked    int       `db:"checked"`
	Failed     int       `db:"failed"`
	DegradedAt time.Time `db:"degraded_at"`
}

// DegradedRounds reads which of the rounds roundIDs were judged degraded, by round id; a round
// not in the map was not.
func DegradedRounds(ctx context.Context, db DBTX, roundIDs []int64) (map[int64]DegradedRound, error) {
	out := map[int64]DegradedRound{}
	if len(roundIDs) == 0 {
		return out, nil
	}
	rows, err := collect[DegradedRound](ctx, db, "DegradedRounds", pgx.NamedArgs{"round_ids": roundIDs})
	if err != nil {
		return nil, fmt.Errorf("read the degraded rounds: %w", err)
	}
	for _, r := range rows {
		out[r.RoundID] = r
	}
	return out, nil
}

// A round alerted dead is looked at for a recovery (every job it claimed stored after all) at
// most every RoundRecoverRecheck, for RoundRecoverWithin after it was found dead; a recovery after
// that gets no round.recovered (its round.dead is final). The recheck keeps the look, which reads
// every job of the round, and the tick job the idle leader inserts for it, off the every-second tick.
const (
	RoundRecoverWithin  = 24 * time.Hour
	RoundRecoverRecheck = time.Minute
)

type judgedRound struct {
	RoundID int64 `db:"round_id"`
}

// JudgeDeadRounds emits one round.dead event for each round found dead (RoundDeadAfter) that no
// caller judged yet and that is not recovered already, and one round.recovered event for each
// round alerted dead that is recovered since, at most limit of each, and returns the ids of the
// rounds whose events it emitted. Idempotent: a round is judged once, and found recovered once,
// whoever calls, however often.
func JudgeDeadRounds(ctx context.Context, db DBTX, limit int) ([]int64, error) {
	rows, err := collect[judgedRound](ctx, db, "JudgeDeadRounds", pgx.StrictNamedArgs{"dead_after": RoundDeadAfter,
		"without_heartbeat": RoundDeadWithoutHeartbeat, "limit": limit, "recover_within": RoundRecoverWithin,
		"recheck": RoundRecoverRecheck})
	if err != nil {
		return nil, fmt.Errorf("judge dead rounds: %w", err)
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.RoundID
	}
	return ids, nil
}

// DeadRoundsUnjudged says whether JudgeDeadRounds has a round to look at.
func DeadRoundsUnjudged(ctx context.Context, db DBTX) (bool, error) {
	b, err := valueOf[bool](ctx, db, "DeadRoundsUnjudged", pgx.StrictNamedArgs{"dead_after": RoundDeadAfter,
		"without_heartbeat": RoundDeadWithoutHeartbeat, "recover_within": RoundRecoverWithin,
		"recheck": RoundRecoverRecheck})
	if err != nil {
		return false, fmt.Errorf("look for dead rounds: %w", err)
	}
	return b, nil
}

// CountOpenAlerts counts the server.down alerts not yet resolved.
func CountOpenAlerts(ctx context.Context, db DBTX) (int64, error) {
	n, err := valueOf[int64](ctx, db, "CountOpenAlerts")
	if err != nil {
		return 0, fmt.Errorf("count open alerts: %w", err)
	}
	return n, nil
}

// EventDelivery is one event's delivery to one receiver, as listed.
// Its JSON is the one shape of a delivery, in `alerts list -o json` and status's open alerts
// (docs/alerts.md, docs/status.md).
type EventDelivery struct {
	EventID       string     `db:"event_id" json:"-"`
	Receiver      string     `db:"receiver" json:"receiver"`
	State         string     `db:"state" json:"state"`
	Attempts      int        `db:"attempts" json:"attempts"`
	LastStatus    *int       `db:"last_status" json:"last_status"`
	LastError     *string    `db:"last_error" json:"last_error"`
	LastAttemptAt *time.Time `db:"last_attempt_at" json:"last_attempt_at"`
}

// EventDeliveries lists the deliveries of the given events.
func EventDeliveries(ctx context.Context, db DBTX, eventIDs []string) ([]EventDelivery, error) {
	return collect[EventDelivery](ctx, db, "EventDeliveries", pgx.NamedArgs{"event_ids": eventIDs})
}

// DeliveryTotal counts the attempts to one receiver that ended one way.
type DeliveryTotal struct {
	Receiver string `db:"receiver"`
	Outcome  string `db:"outcome"`
	Attempts int64  `db:"attempts"`
}

// DeliveryTotals counts every attempt by receiver and outcome, for /metrics.
func DeliveryTotals(ctx context.Context, db DBTX) ([]DeliveryTotal, error) {
	return collect[DeliveryTotal](ctx, db, "DeliveryTotals")
}

// EmitVerifyFailed writes a verify.failed event (with its deliveries and River jobs) and returns
// its id; data is the event's details.
func EmitVerifyFailed(ctx context.Context, db DBTX, data json.RawMessage) (string, error) {
	id, err := valueOf[string](ctx, db, "EmitVerifyFailed", pgx.NamedArgs{"data": string(data)})
	if err != nil {
		return "", fmt.Errorf("write the verify.failed event: %w", err)
	}
	return id, nil
}
