package alerts

import (
	"context"
	"encoding/base64"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// The formats a receiver takes.
const (
	FormatStandardWebhooks = "standard-webhooks"
	FormatSlack            = "slack"
	FormatAlertmanager     = "alertmanager"
)

// Formats lists the receiver formats.
var Formats = []string{FormatStandardWebhooks, FormatSlack, FormatAlertmanager}

// The event types. TypeTest is only ever sent by `receivers test`, never stored.
const (
	TypeServerDown         = "server.down"
	TypeServerRecovered    = "server.recovered"
	TypeServerToolsChanged = "server.tools_changed"
	TypeServerAuthChanged  = "server.auth_changed"
	TypeProberDegraded     = "prober.degraded"
	TypeRoundDead          = "round.dead"
	// TypeRoundRecovered resolves a round.dead: every job the round claimed was stored after all
	// (runs recover). It goes to the receivers that had the round.dead, never asked for itself.
	TypeRoundRecovered = "round.recovered"
	TypeVerifyFailed   = "verify.failed"
	TypeTest           = "test"
)

// EventTypes lists the event types a receiver may ask for (every one by default).
var EventTypes = []string{TypeServerDown, TypeServerRecovered, TypeServerToolsChanged, TypeServerAuthChanged,
	TypeProberDegraded, TypeRoundDead, TypeVerifyFailed}

// Receiver settings named in a *SettingError.
const (
	SettingName   Setting = "name"
	SettingURL    Setting = "url"
	SettingFormat Setting = "format"
	SettingSecret Setting = "secret"
	SettingEvents Setting = "events"
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// MaxURL bounds a receiver's URL, in bytes.
const MaxURL = 2048

// NewReceiver is a receiver to add. Secret is the secret file's content ("whsec_<base64>",
// surrounding space ignored); Events nil means every type.
type NewReceiver struct {
	Name, URL, Format string
	Secret            []byte
	Events            []string
}

// AddReceiver checks and registers a receiver. Bad input is a *SettingError; a name taken is
// queries.ErrReceiverExists.
func AddReceiver(ctx context.Context, db queries.DBTX, r NewReceiver, by string) error {
	rs, err := r.check()
	if err != nil {
		return err
	}
	_, err = queries.AddReceiver(ctx, db, rs, by)
	return err
}

// Check judges the receiver as AddReceiver will, without a database: a command calls it before it
// connects, so that bad input exits 2 whether or not the database answers.
func (r NewReceiver) Check() error {
	_, err := r.check()
	return err
}

func (r NewReceiver) check() (queries.ReceiverSecret, error) {
	out := queries.ReceiverSecret{Name: r.Name, URL: r.URL, Format: r.Format}
	if !nameRE.MatchString(r.Name) {
		return out, settingErr(SettingName, "%q: use 1 to 63 of a-z, 0-9, '.', '_' and '-', starting with a letter or digit", r.Name)
	}
	if err := checkURL(r.URL); err != nil {
		return out, err
	}
	if !slices.Contains(Formats, r.Format) {
		return out, settingErr(SettingFormat, "%q: must be one of %s", r.Format, strings.Join(Formats, ", "))
	}
	secret := strings.TrimSpace(string(r.Secret))
	switch {
	case r.Format == FormatStandardWebhooks && secret == "":
		return out, settingErr(SettingSecret, "a standard-webhooks receiver needs a secret file (whsec_<base64>)")
	case r.Format != FormatStandardWebhooks && secret != "":
		return out, settingErr(SettingSecret, "only a standard-webhooks receiver takes a secret")
	case secret != "":
		if err := checkSecret(secret); err != nil {
			return out, err
		}
		out.Secret = secret
	}
	out.Events = EventTypes
	if r.Events != nil {
		out.Events = nil
		for _, e := range r.Events {
			e = strings.TrimSpace(e)
			if !slices.Contains(EventTypes, e) {
				return out, settingErr(SettingEvents, "%q: must be among %s", e, strings.Join(EventTypes, ", "))
			}
			if !slices.Contains(out.Events, e) {
				out.Events = append(out.Events, e)
			}
		}
		if len(out.Events) == 0 {
			return out, settingErr(SettingEvents, "name at least one event type")
		}
	}
	return out, nil
}

func checkURL(raw string) error {
	if len(raw) > MaxURL {
		return settingErr(SettingURL, "longer than %d bytes", MaxURL)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return settingErr(SettingURL, "must be an absolute http or https URL")
	}
	if u.User != nil {
		return settingErr(SettingURL, "must not carry user info; a standard-webhooks receiver is authenticated by its signature")
	}
	// Delivery reaches private addresses but never a metadata endpoint or a link-local one
	// (Sender's guard): a receiver written as one could never be delivered to, and said so only at
	// its first event.
	if refused := check.RefusedLiteral(raw, true); refused != nil {
		return settingErr(SettingURL, "%s is %s: no delivery is ever sent there", refused.Addr, refused.Reason)
	}
	return nil
}

// checkSecret: "whsec_" and the base64 of 24 to 64 random bytes, as the Standard Webhooks
// specification asks.
func checkSecret(s string) error {
	b64, ok := strings.CutPrefix(s, "whsec_")
	if !ok {
		return settingErr(SettingSecret, "the secret file must hold whsec_<base64>")
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return settingErr(SettingSecret, "the part after whsec_ is not base64")
	}
	if len(key) < 24 || len(key) > 64 {
		return settingErr(SettingSecret, "the key is %d bytes; it must be 24 to 64", len(key))
	}
	return nil
}

// ListReceivers lists the receivers (never their secrets).
func ListReceivers(ctx context.Context, db queries.DBTX) ([]queries.Receiver, error) {
	return queries.ListReceivers(ctx, db)
}

// RemoveReceiver removes a receiver; its pending deliveries end as failed (returned: how many).
func RemoveReceiver(ctx context.Context, db queries.DBTX, name string) (int64, error) {
	return queries.RemoveReceiver(ctx, db, name)
}

// RedactURL is a receiver's URL fit to print: scheme and host only. A Slack incoming-webhook URL
// is itself the secret, and a path or query may hold a token.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(redacted)"
	}
	out := u.Scheme + "://" + u.Host
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		out += "/…"
	}
	return out
}
