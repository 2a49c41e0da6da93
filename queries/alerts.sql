-- Alerts (docs/alerts.md): the policy, the receivers, the outbox of events and their deliveries.
-- The state and the events are written by probe_runs_alert (migrations/00016_alerts.sql) in the
-- finish's transaction; these queries read them and record deliveries.

-- name: AlertPolicy
SELECT down_after, up_after, storm_share, storm_min, resend_every, updated_at, updated_by
  FROM alert_policy;

-- name: SetAlertPolicy
UPDATE alert_policy
   SET down_after = @down_after, up_after = @up_after, storm_share = @storm_share, storm_min = @storm_min,
       resend_every = @resend_every::interval, updated_at = now(), updated_by = @updated_by
RETURNING down_after, up_after, storm_share, storm_min, resend_every, updated_at, updated_by;

-- name: AddReceiver
INSERT INTO alert_receivers (name, url, format, secret, events, created_by)
VALUES (@name, @url, @format, @secret, @events, @created_by)
RETURNING id;

-- name: ListReceivers
-- The secret never leaves the database through this query: only whether there is one.
SELECT id, name, url, format, (secret IS NOT NULL) AS has_secret, events, created_at
  FROM alert_receivers
 WHERE removed_at IS NULL
 ORDER BY name;

-- name: RemoveReceiver
-- Its pending deliveries end as failed: nobody will deliver them.
WITH removed AS (
    UPDATE alert_receivers SET removed_at = now()
     WHERE name = @name AND removed_at IS NULL
    RETURNING id
), ended AS (
    UPDATE alert_deliveries AS d
       SET state = 'failed', last_error = 'receiver removed', done_at = now()
      FROM removed
     WHERE d.receiver_id = removed.id AND d.state = 'pending'
    RETURNING d.event_id
)
SELECT removed.id, (SELECT count(*) FROM ended) AS ended FROM removed;

-- name: ReceiverByName
SELECT id, name, url, format, coalesce(secret, '') AS secret, events
  FROM alert_receivers
 WHERE name = @name AND removed_at IS NULL;

-- name: PendingDeliveries
-- Deliveries due now, oldest event first; @round_ids (NULL: any) keeps those rounds' events.
SELECT d.event_id::text AS event_id, d.receiver_id
  FROM alert_deliveries AS d
  JOIN alert_events AS e ON e.id = d.event_id
 WHERE d.state = 'pending'
   AND d.next_attempt_at <= coalesce(@now::timestamptz, now())
   AND (@round_ids::bigint[] IS NULL OR e.round_id = ANY (@round_ids))
 ORDER BY e.seq, d.receiver_id
 LIMIT @limit;

-- name: CountPendingDeliveries
SELECT count(*) AS pending
  FROM alert_deliveries AS d
  JOIN alert_events AS e ON e.id = d.event_id
 WHERE d.state = 'pending'
   AND (@round_ids::bigint[] IS NULL OR e.round_id = ANY (@round_ids));

-- name: ClaimDelivery
-- One pending delivery whose lease is free, leased for an attempt until now() + @lease_seconds,
-- with what its payload needs; committed at once, so no transaction is held across the request.
-- No row: another process holds its lease (or its row lock), it is no longer pending, or it does
-- not exist (DeliveryState tells).
WITH c AS (
    SELECT d.event_id, d.receiver_id
      FROM alert_deliveries AS d
     WHERE d.event_id = @event_id::uuid AND d.receiver_id = @receiver_id AND d.state = 'pending'
       AND (d.lease_until IS NULL OR d.lease_until <= now())
       FOR UPDATE SKIP LOCKED
), l AS (
    UPDATE alert_deliveries AS d
       SET lease_until = now() + make_interval(secs => @lease_seconds::double precision)
      FROM c
     WHERE d.event_id = c.event_id AND d.receiver_id = c.receiver_id
    RETURNING d.event_id, d.receiver_id, d.state, d.attempts, d.lease_until
)
SELECT l.event_id::text AS event_id, l.receiver_id, l.state, l.attempts, l.lease_until,
       e.type, e.server_id, s.slug, coalesce(s.endpoint_url, '') AS url, coalesce(s.kind, '') AS kind,
       coalesce(s.plan, '') AS plan, e.state AS event_state, e.previous_state, e.runs, e.round_id, e.data,
       e.created_at, e.resolved_at, down.created_at AS down_at,
       r.name AS receiver, r.url AS receiver_url, r.format, coalesce(r.secret, '') AS secret
  FROM l
  JOIN alert_events AS e ON e.id = l.event_id
  JOIN alert_receivers AS r ON r.id = l.receiver_id
  LEFT JOIN servers AS s ON s.id = e.server_id
  LEFT JOIN alert_events AS down ON down.id = coalesce(e.data->>'down_event_id', e.data->>'dead_event_id')::uuid;

-- name: DeliveryState
SELECT state FROM alert_deliveries WHERE event_id = @event_id::uuid AND receiver_id = @receiver_id;

-- name: RecordAttempt
-- An attempt and the delivery's new state, freeing its lease, only if the attempt still holds
-- the lease it claimed (@lease_until): else nothing is recorded (no row), another attempt may
-- have taken the delivery since.
WITH d AS (
    UPDATE alert_deliveries
       SET attempts = @attempt, last_status = @status_code, last_error = @error, last_attempt_at = now(),
           state = @state, next_attempt_at = coalesce(@next_attempt_at::timestamptz, next_attempt_at),
           done_at = CASE WHEN @state <> 'pending' THEN now() END, lease_until = NULL
     WHERE event_id = @event_id::uuid AND receiver_id = @receiver_id AND lease_until = @lease_until::timestamptz
    RETURNING event_id, receiver_id
)
INSERT INTO alert_delivery_attempts (event_id, receiver_id, attempt, status_code, error)
SELECT d.event_id, d.receiver_id, @attempt, @status_code, @error FROM d;

-- name: AttemptRecorded
-- Whether an attempt is recorded as it ended (its number, status and error): a record retried after
-- a broken connection asks whether the try whose answer it lost had committed.
SELECT EXISTS (
    SELECT 1 FROM alert_delivery_attempts
     WHERE event_id = @event_id::uuid AND receiver_id = @receiver_id AND attempt = @attempt
       AND status_code IS NOT DISTINCT FROM @status_code::integer AND error IS NOT DISTINCT FROM @error::text
) AS recorded;

-- name: ExpiredLeases
-- Pending deliveries whose attempt began and was never recorded (its deliverer crashed): their
-- lease ran out. Oldest event first.
SELECT d.event_id::text AS event_id, d.receiver_id
  FROM alert_deliveries AS d
  JOIN alert_events AS e ON e.id = d.event_id
 WHERE d.state = 'pending' AND d.lease_until <= now()
 ORDER BY e.seq, d.receiver_id
 LIMIT @limit;

-- name: OpenDownAlerts
-- The server.down alerts still open, for each Alertmanager receiver that takes them: sent again
-- every resend_every while they stay open.
SELECT e.id::text AS event_id, e.created_at, e.runs, e.round_id, e.data, s.slug, s.endpoint_url AS url,
       s.kind, s.plan, r.id AS receiver_id, r.name AS receiver, r.url AS receiver_url
  FROM alert_events AS e
  JOIN servers AS s ON s.id = e.server_id
  JOIN alert_receivers AS r ON r.format = 'alertmanager' AND r.removed_at IS NULL AND 'server.down' = ANY (r.events)
 WHERE e.type = 'server.down' AND e.resolved_at IS NULL
 ORDER BY r.id, e.seq;

-- name: ListAlertEvents
-- Newest first. @open keeps the server.down alerts not yet resolved.
SELECT e.id::text AS id, e.seq, e.type, s.slug AS server, e.state, e.previous_state, e.runs, e.round_id,
       e.data, e.created_at, e.resolved_at
  FROM alert_events AS e
  LEFT JOIN servers AS s ON s.id = e.server_id
 WHERE (NOT @open::boolean OR (e.type = 'server.down' AND e.resolved_at IS NULL))
   AND (@since::timestamptz IS NULL OR e.created_at >= @since)
 ORDER BY e.seq DESC
 LIMIT @limit;

-- name: DegradedRounds
-- Which of the rounds @round_ids the storm guard judged degraded, with the tally that tipped
-- each: the one read of it the round summary, status and the runs share.
SELECT round_id, checked, failed, degraded_at
  FROM alert_degraded_rounds
 WHERE round_id = ANY (@round_ids::bigint[])
 ORDER BY round_id;

-- name: JudgeDeadRounds
-- The rounds found dead and not yet judged, and those alerted dead that are recovered since
-- (alert_judge_dead_rounds): the ids of the rounds whose round.dead or round.recovered it emitted.
-- @dead_after and @without_heartbeat are RoundDeadAfter and RoundDeadWithoutHeartbeat,
-- @recover_within and @recheck RoundRecoverWithin and RoundRecoverRecheck.
SELECT round_id
  FROM alert_judge_dead_rounds(@dead_after::interval, @without_heartbeat::interval, @limit::integer,
                               @recover_within::interval, @recheck::interval) AS round_id;

-- name: DeadRoundsUnjudged
-- Whether JudgeDeadRounds has anything to look at: a round dead and not yet judged, or one
-- alerted dead, not recovered and due a look (the arguments as JudgeDeadRounds'). The idle tick's
-- cheap question.
SELECT EXISTS (
    SELECT 1
      FROM probe_rounds AS pr
     WHERE pr.finished_at IS NULL
       AND coalesce(pr.heartbeat_at + @dead_after::interval, pr.started_at + @without_heartbeat::interval) < now()
       AND NOT EXISTS (SELECT 1 FROM alert_dead_rounds AS d WHERE d.round_id = pr.id)
) OR EXISTS (
    SELECT 1
      FROM alert_dead_rounds AS d
     WHERE d.event_id IS NOT NULL AND d.recovered_at IS NULL
       AND d.judged_at > now() - @recover_within::interval
       AND coalesce(d.checked_at, d.judged_at) <= now() - @recheck::interval
) AS unjudged;

-- name: CountOpenAlerts
-- The server.down alerts not yet resolved (what ListAlertEvents lists with @open).
SELECT count(*) FROM alert_events WHERE type = 'server.down' AND resolved_at IS NULL;

-- name: EventDeliveries
SELECT d.event_id::text AS event_id, r.name AS receiver, d.state, d.attempts, d.last_status, d.last_error,
       d.last_attempt_at
  FROM alert_deliveries AS d
  JOIN alert_receivers AS r ON r.id = d.receiver_id
 WHERE d.event_id = ANY (@event_ids::uuid[])
 ORDER BY r.name;

-- name: DeliveryTotals
-- For /metrics: attempts by receiver and how they ended (delivered: a 2xx; failed: anything else).
SELECT r.name AS receiver,
       CASE WHEN a.status_code BETWEEN 200 AND 299 THEN 'delivered' ELSE 'failed' END AS outcome,
       count(*) AS attempts
  FROM alert_delivery_attempts AS a
  JOIN alert_receivers AS r ON r.id = a.receiver_id
 GROUP BY 1, 2
 ORDER BY 1, 2;

-- name: EmitVerifyFailed
-- A failed post-deploy verification, as an event (deploy verify --alert).
SELECT alert_emit('verify.failed', NULL, 'failed', NULL, '{}', NULL, @data::jsonb)::text AS id;
