package alerts

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// oneShotFor is how long Alertmanager shows an event that has no recovery (tools or auth changed,
// a degraded or dead round, a failed verification): it is sent with endsAt this far after it.
const oneShotFor = 5 * time.Minute

// alertPath is Alertmanager's API for posting alerts, appended to a receiver's URL.
const alertPath = "/api/v2/alerts"

// request is one HTTP request of a delivery.
type request struct {
	url    string
	header http.Header
	body   []byte
}

// Event is an event as receivers see it (the Standard Webhooks body is its JSON).
type Event struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      EventData `json:"data"`
}

// EventData is an event's data.
type EventData struct {
	EventID       string       `json:"event_id"`
	Server        *EventServer `json:"server,omitempty"`
	State         string       `json:"state,omitempty"`
	PreviousState string       `json:"previous_state,omitempty"`
	Runs          []int64      `json:"runs"`
	RoundID       *int64       `json:"round_id"`
	// ResolvedAt is when a server.down alert was resolved (the server recovered), or a round.dead
	// one (the round recovered), when it was by the time this attempt was made: an attempt
	// retried after the recovery says so.
	ResolvedAt *time.Time      `json:"resolved_at,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`
}

// EventServer is the server an event is about; its URL redacted.
type EventServer struct {
	Slug string `json:"slug"`
	URL  string `json:"url"`
	Kind string `json:"kind"`
	Plan string `json:"plan"`
}

func eventOf(d queries.Delivery) Event {
	ev := Event{Type: d.Type, Timestamp: d.CreatedAt, Data: EventData{EventID: d.EventID, Runs: d.Runs,
		RoundID: d.RoundID, State: deref(d.EventState), PreviousState: deref(d.PreviousState)}}
	if (d.Type == TypeServerDown || d.Type == TypeRoundDead) && d.ResolvedAt != nil {
		at := d.ResolvedAt.UTC()
		ev.Data.ResolvedAt = &at
	}
	if ev.Data.Runs == nil {
		ev.Data.Runs = []int64{}
	}
	if d.Slug != nil {
		ev.Data.Server = &EventServer{Slug: *d.Slug, URL: check.RedactURL(d.URL), Kind: d.Kind, Plan: d.Plan}
	}
	if len(d.Data) > 0 && string(d.Data) != "{}" {
		ev.Data.Details = d.Data
	}
	return ev
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// build makes the request of one attempt, at now (the signature's timestamp).
func build(d queries.Delivery, now time.Time) (request, error) {
	ev := eventOf(d)
	switch d.Format {
	case FormatStandardWebhooks:
		return signed(d.ReceiverURL, d.Secret, ev, now)
	case FormatSlack:
		body, err := json.Marshal(slackBody(ev))
		return request{url: d.ReceiverURL, header: jsonHeader(), body: body}, err
	case FormatAlertmanager:
		body, err := json.Marshal([]amAlert{amAlertOf(ev, d.DownAt)})
		return request{url: amURL(d.ReceiverURL), header: jsonHeader(), body: body}, err
	}
	return request{}, fmt.Errorf("receiver %s: unknown format %q", d.Receiver, d.Format)
}

func jsonHeader() http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return h
}

// signed is a Standard Webhooks request: webhook-id is the event's id (the same on every retry,
// so a receiver can drop a repeat), webhook-timestamp the attempt's time, webhook-signature
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>".
func signed(url, secret string, ev Event, now time.Time) (request, error) {
	body, err := json.Marshal(ev)
	if err != nil {
		return request{}, err
	}
	h, err := signHeaders(secret, ev.Data.EventID, now, body)
	if err != nil {
		return request{}, err
	}
	return request{url: url, header: h, body: body}, nil
}

// signHeaders are the Standard Webhooks headers of body sent as message id at now.
func signHeaders(secret, id string, now time.Time, body []byte) (http.Header, error) {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, fmt.Errorf("the receiver's secret: %w", err)
	}
	sig, err := wh.Sign(id, now, body)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	h := jsonHeader()
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", sig)
	return h, nil
}

// headline is one line saying what happened, for Slack and Alertmanager's summary.
func headline(ev Event) string {
	srv := ""
	if ev.Data.Server != nil {
		srv = ev.Data.Server.Slug
	}
	switch ev.Type {
	case TypeServerDown:
		return fmt.Sprintf("server %s is down", srv)
	case TypeServerRecovered:
		return fmt.Sprintf("server %s recovered", srv)
	case TypeServerToolsChanged:
		return fmt.Sprintf("server %s changed its tools", srv)
	case TypeServerAuthChanged:
		return fmt.Sprintf("server %s changed its auth", srv)
	case TypeProberDegraded:
		return fmt.Sprintf("round %s was degraded: most of its checks failed at once, which says more about the prober than the servers", roundOf(ev))
	case TypeRoundDead:
		return fmt.Sprintf("round %s is dead: its heartbeat stopped", roundOf(ev))
	case TypeRoundRecovered:
		return fmt.Sprintf("round %s recovered: every job it claimed was stored after all", roundOf(ev))
	case TypeVerifyFailed:
		var f VerifyFailure
		if json.Unmarshal(ev.Data.Details, &f) == nil && f.ReleaseID != 0 {
			return fmt.Sprintf("deploy verify failed for release #%d (%s): %s", f.ReleaseID, f.Version,
				strings.Join(f.Failed, ", "))
		}
		return "deploy verify failed"
	case TypeTest:
		return "test event from probectl: this receiver is reachable"
	}
	return ev.Type
}

func roundOf(ev Event) string {
	if ev.Data.RoundID == nil {
		return "?"
	}
	return strconv.FormatInt(*ev.Data.RoundID, 10)
}

func runsText(runs []int64) string {
	s := make([]string, len(runs))
	for i, r := range runs {
		s[i] = strconv.FormatInt(r, 10)
	}
	return strings.Join(s, ",")
}

// slackBody is an incoming-webhook body: text and one section block. Nothing secret: the server's
// URL is redacted and no server-chosen text is included.
func slackBody(ev Event) map[string]any {
	text := headline(ev)
	detail := fmt.Sprintf("*%s*", text)
	if len(ev.Data.Runs) > 0 {
		detail += fmt.Sprintf("\nruns: %s", runsText(ev.Data.Runs))
	}
	if ev.Data.Server != nil {
		detail += fmt.Sprintf("\nurl: %s (%s, %s plan)", ev.Data.Server.URL, ev.Data.Server.Kind, ev.Data.Server.Plan)
	}
	detail += fmt.Sprintf("\nevent: %s at %s", ev.Data.EventID, ev.Timestamp.UTC().Format(time.RFC3339))
	return map[string]any{
		"text": text,
		"blocks": []any{map[string]any{"type": "section",
			"text": map[string]any{"type": "mrkdwn", "text": detail}}},
	}
}

// amAlert is one alert of Alertmanager's POST /api/v2/alerts.
type amAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      *time.Time        `json:"endsAt,omitempty"`
}

// alertnames maps event types to Alertmanager alert names. A recovery resolves the down (or
// dead) alert, so it carries that alert's name and labels.
var alertnames = map[string]string{
	TypeServerDown:         "ProbectlServerDown",
	TypeServerRecovered:    "ProbectlServerDown",
	TypeServerToolsChanged: "ProbectlServerToolsChanged",
	TypeServerAuthChanged:  "ProbectlServerAuthChanged",
	TypeProberDegraded:     "ProbectlProberDegraded",
	TypeRoundDead:          "ProbectlRoundDead",
	TypeRoundRecovered:     "ProbectlRoundDead",
	TypeVerifyFailed:       "ProbectlVerifyFailed",
	TypeTest:               "ProbectlTest",
}

// amAlertOf: a down alert fires from its event's time with no endsAt (kept firing by re-sends),
// or, when it was resolved before this attempt (a down retried after its recovery), ends at its
// resolution, so that a late down never fires an alert again; a recovery (of a server, or of a
// round) ends its alert (startsAt the down or dead event's time, downAt); other events end by
// themselves oneShotFor after they happened, a dead round sooner if it recovered sooner.
func amAlertOf(ev Event, downAt *time.Time) amAlert {
	a := amAlert{Labels: map[string]string{"alertname": alertnames[ev.Type]},
		Annotations: map[string]string{"summary": headline(ev), "event_id": ev.Data.EventID},
		StartsAt:    ev.Timestamp}
	if ev.Data.Server != nil {
		a.Labels["server"] = ev.Data.Server.Slug
		a.Labels["kind"] = ev.Data.Server.Kind
		a.Labels["plan"] = ev.Data.Server.Plan
		a.Annotations["url"] = ev.Data.Server.URL
	}
	if ev.Data.RoundID != nil && ev.Data.Server == nil {
		a.Labels["round"] = roundOf(ev)
	}
	if len(ev.Data.Runs) > 0 {
		a.Annotations["runs"] = runsText(ev.Data.Runs)
	}
	switch ev.Type {
	case TypeServerDown:
		a.EndsAt = ev.Data.ResolvedAt
	case TypeServerRecovered, TypeRoundRecovered:
		end := ev.Timestamp
		a.EndsAt = &end
		if downAt != nil {
			a.StartsAt = *downAt
		}
	case TypeRoundDead:
		end := ev.Timestamp.Add(oneShotFor)
		if r := ev.Data.ResolvedAt; r != nil && r.Before(end) {
			end = *r
		}
		a.EndsAt = &end
	default:
		end := ev.Timestamp.Add(oneShotFor)
		a.EndsAt = &end
	}
	return a
}

func amURL(base string) string {
	if strings.HasSuffix(base, alertPath) {
		return base
	}
	return strings.TrimRight(base, "/") + alertPath
}
