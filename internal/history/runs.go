package history

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/probectl/probectl/internal/keys"
	"github.com/probectl/probectl/probe/attest"
	"github.com/probectl/probectl/queries"
)

// Outcomes a run can have, the values `runs list --outcome` takes.
var Outcomes = []string{"ok", "failed", "error"}

// MaxListLimit bounds how many runs one list returns.
const MaxListLimit = 10000

// ListRuns returns the runs that match, newest first; queries.ErrNoServer when f.Server names no
// server.
func ListRuns(ctx context.Context, db queries.DBTX, f queries.RunFilter) ([]queries.Run, error) {
	if f.Limit <= 0 || f.Limit > MaxListLimit {
		return nil, fmt.Errorf("list runs: limit %d is outside 1..%d", f.Limit, MaxListLimit)
	}
	var runs []queries.Run
	err := read(ctx, db, func(db queries.DBTX) error {
		var err error
		if f.Server != "" {
			// An unknown slug is a mistake to report, not a server without runs.
			s, err := queries.GetServerBySlug(ctx, db, f.Server)
			if err != nil {
				return err
			}
			if err := queries.OneServerPlanSettings(ctx, db); err != nil {
				return err
			}
			now, err := queries.StatusNow(ctx, db, nil)
			if err != nil {
				return err
			}
			if runs, err = serverRuns(ctx, db, s.ID, f, now); err != nil {
				return err
			}
		} else if runs, err = queries.ListRuns(ctx, db, f); err != nil {
			return err
		}
		return markDegraded(ctx, db, runs)
	})
	return runs, err
}

// keyWindows are how far back from now a read of one server's runs first looks by partition key,
// in turn, before it reads every partition: most servers' newest runs lie in the last days, and a
// read bounded by the key reads only their partitions (docs/retention.md).
var keyWindows = []time.Duration{2 * 24 * time.Hour, 8 * 24 * time.Hour, 32 * 24 * time.Hour, 128 * 24 * time.Hour}

// serverRuns returns what queries.ListRuns returns for f (whose Server is the server serverID),
// reading the fewest partitions it can. A run starts within queries.RunKeyLag of its key (its
// job's request), so a read of the runs keyed from K on is the answer once it is full and its
// oldest run started at or after K + RunKeyLag: a run keyed before K started before that. A
// filter by round or outcome is read as ListRuns reads it.
func serverRuns(ctx context.Context, db queries.DBTX, serverID int64, f queries.RunFilter, now time.Time) ([]queries.Run, error) {
	if f.RoundID != nil || len(f.Outcomes) > 0 {
		return queries.ListRuns(ctx, db, f)
	}
	if f.Since != nil {
		from := f.Since.Add(-queries.RunKeyLag)
		return queries.ServerRuns(ctx, db, serverID, &from, f.Since, f.Limit)
	}
	for _, w := range keyWindows {
		from := now.Add(-w)
		runs, err := queries.ServerRuns(ctx, db, serverID, &from, nil, f.Limit)
		if err != nil {
			return nil, err
		}
		if len(runs) == f.Limit && !runs[len(runs)-1].StartedAt.Before(from.Add(queries.RunKeyLag)) {
			return runs, nil
		}
	}
	return queries.ServerRuns(ctx, db, serverID, nil, nil, f.Limit)
}

// markDegraded sets RoundDegraded on the runs whose round the storm guard judged degraded.
func markDegraded(ctx context.Context, db queries.DBTX, runs []queries.Run) error {
	var ids []int64
	for _, r := range runs {
		if r.RoundID != nil {
			ids = append(ids, *r.RoundID)
		}
	}
	degraded, err := queries.DegradedRounds(ctx, db, ids)
	if err != nil {
		return err
	}
	for i, r := range runs {
		if r.RoundID != nil {
			_, runs[i].RoundDegraded = degraded[*r.RoundID]
		}
	}
	return nil
}

// RunView is one run and whether its envelope verifies against the registered keys.
type RunView struct {
	queries.RunDetail
	// Verified is nil when the run has no envelope.
	Verified *bool
	// VerifyError says why the envelope does not verify ("" when it does or there is none).
	VerifyError string
}

// PrunedError says a run is no longer stored: a prune dropped its partition (docs/retention.md).
// It wraps queries.ErrNoRun.
type PrunedError struct {
	ID    int64
	Place queries.PrunedRunPlace
}

func (e *PrunedError) Error() string {
	where := "no export holds it: it was pruned with --without-export"
	if e.Place.Archive != nil && e.Place.ExportID != nil {
		where = fmt.Sprintf("archive %s (export %d) holds it; 'probectl runs verify --archive' checks it", *e.Place.Archive, *e.Place.ExportID)
	}
	return fmt.Sprintf("run %d was pruned on %s with partition %s (runs of jobs requested before %s); %s",
		e.ID, e.Place.DroppedAt.UTC().Format(time.RFC3339), e.Place.Table, e.Place.RangeTo.UTC().Format(time.RFC3339), where)
}

func (e *PrunedError) Unwrap() error { return queries.ErrNoRun }

// ShowRun reads one run (queries.ErrNoRun when there is none) and verifies its envelope the way
// deploy verify does.
func ShowRun(ctx context.Context, db queries.DBTX, id int64) (RunView, error) {
	var v RunView
	err := read(ctx, db, func(db queries.DBTX) error {
		var err error
		v, err = showRun(ctx, db, id)
		return err
	})
	return v, err
}

func showRun(ctx context.Context, db queries.DBTX, id int64) (RunView, error) {
	d, err := queries.GetRun(ctx, db, id)
	if errors.Is(err, queries.ErrNoRun) {
		place, perr := queries.PrunedRun(ctx, db, id)
		if perr != nil {
			return RunView{}, perr
		}
		if place != nil {
			return RunView{}, &PrunedError{ID: id, Place: *place}
		}
	}
	if err != nil {
		return RunView{}, err
	}
	v := RunView{RunDetail: d}
	one := []queries.Run{d.Run}
	if err := markDegraded(ctx, db, one); err != nil {
		return RunView{}, err
	}
	v.RoundDegraded = one[0].RoundDegraded
	if len(d.Envelope) == 0 {
		return v, nil
	}
	registered, err := keys.Verification(ctx, db)
	if err != nil {
		return RunView{}, err
	}
	finished := d.FinishedAt
	if d.JobFinishedAt != nil {
		finished = *d.JobFinishedAt
	}
	err = attest.VerifyRun(attest.StoredRun{JobID: d.SignedJobID, Slug: d.Server, URL: d.EndpointURL, FinishedAt: finished,
		Envelope: d.Envelope}, registered)
	ok := err == nil
	v.Verified = &ok
	if err != nil {
		v.VerifyError = err.Error()
	}
	return v, nil
}

// BadInputError says an input of an offline verification is not what it should be (not a public
// key, not an envelope): the run was not judged.
type BadInputError struct{ Err error }

func (e *BadInputError) Error() string { return e.Err.Error() }
func (e *BadInputError) Unwrap() error { return e.Err }

// VerifyExported checks an exported envelope against one public key as `keys export` writes it,
// offline: it reads nothing but its arguments. It returns the signed statement when the envelope
// verifies, and the key it read; an error wrapping a *BadInputError when an input cannot be read;
// any other error: the envelope does not verify. A retired key's export says when it was retired
// (ParseExportedKey), and a run its statement says was checked from then on does not verify, as
// `runs show` and `deploy verify` judge it (ErrSignedAfterRetirement).
func VerifyExported(envelope, publicKeyPEM []byte) (*attest.Statement, ExportedKey, error) {
	key, err := ParseExportedKey(publicKeyPEM)
	if err != nil {
		return nil, key, &BadInputError{Err: err}
	}
	var probe struct {
		PayloadType *string           `json:"payloadType"`
		Payload     *string           `json:"payload"`
		Signatures  []json.RawMessage `json:"signatures"`
	}
	if err := json.Unmarshal(envelope, &probe); err != nil {
		return nil, key, &BadInputError{Err: fmt.Errorf("envelope is not JSON: %w", err)}
	}
	if probe.PayloadType == nil || probe.Payload == nil {
		return nil, key, &BadInputError{Err: errors.New("envelope is not a DSSE envelope: it has no payloadType or payload")}
	}
	st, err := attest.Verify(envelope, map[string]ed25519.PublicKey{key.ID: key.Public})
	if err != nil {
		return st, key, err
	}
	if key.RetiredAt != nil {
		if done := st.Predicate.Result.FinishedAt; !done.Before(*key.RetiredAt) {
			return st, key, fmt.Errorf("%w: the run's check finished at %s, and key %s was retired at %s",
				ErrSignedAfterRetirement, done.UTC().Format(time.RFC3339Nano), key.ID, key.RetiredAt.UTC().Format(time.RFC3339Nano))
		}
	}
	return st, key, nil
}

// ErrSignedAfterRetirement says a run was signed by a key after the key's retirement: whoever
// signed it held a key that was no longer to be used (rotated, or leaked).
var ErrSignedAfterRetirement = errors.New("signed after its key was retired")

// ExportedKey is a public key as `keys export` writes it.
type ExportedKey struct {
	ID     string
	Public ed25519.PublicKey
	// RetiredAt is when the key was retired, from the export's Retired-At line; nil when the key
	// was not retired when it was exported.
	RetiredAt *time.Time
}

// retiredAtField names the line a retired key's export carries before its PEM block (RFC 7468
// explanatory text, which OpenSSL and Go's pem package skip). Not a PEM header: OpenSSL refuses
// a PUBLIC KEY block with headers ("not proc type").
const retiredAtField = "Retired-At"

// ParseExportedKey reads an ed25519 public key from a PKIX "BEGIN PUBLIC KEY" PEM block and, from
// the text before the block, its Retired-At line when there is one.
func ParseExportedKey(data []byte) (ExportedKey, error) {
	pub, err := ParsePublicKey(data)
	if err != nil {
		return ExportedKey{}, err
	}
	key := ExportedKey{ID: attest.KeyID(pub), Public: pub}
	before, _, _ := strings.Cut(string(data), "-----BEGIN ")
	for line := range strings.Lines(before) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), retiredAtField) {
			continue
		}
		if key.RetiredAt != nil {
			return ExportedKey{}, fmt.Errorf("public key: two %s lines", retiredAtField)
		}
		at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(value))
		if err != nil {
			return ExportedKey{}, fmt.Errorf("public key: %s: want an RFC 3339 time: %w", retiredAtField, err)
		}
		key.RetiredAt = &at
	}
	return key, nil
}

// ParsePublicKey reads an ed25519 public key from a PKIX "BEGIN PUBLIC KEY" PEM block.
func ParsePublicKey(data []byte) (ed25519.PublicKey, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, errors.New("public key: not a PEM \"PUBLIC KEY\" block (probectl keys export KEY_ID writes one)")
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("public key: %w", err)
	}
	pub, ok := key.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("public key: a %T, want ed25519", key)
	}
	return pub, nil
}

// ExportKey returns a registered public key as a PKIX PEM block (queries.ErrNoSuchKey when no key
// has that id). A retired key's block is preceded by a line "Retired-At: <RFC 3339 time>", which
// `runs verify` applies: a run signed from then on does not verify.
func ExportKey(ctx context.Context, db queries.DBTX, keyID string) ([]byte, error) {
	keys, err := queries.VerificationKeys(ctx, db)
	if err != nil {
		return nil, err
	}
	k, ok := keys[keyID]
	if !ok {
		return nil, fmt.Errorf("export key %s: %w", keyID, queries.ErrNoSuchKey)
	}
	data, err := pkixPEM(k.Public)
	if err != nil {
		return nil, fmt.Errorf("export key %s: %w", keyID, err)
	}
	if k.RetiredAt != nil {
		data = append([]byte(fmt.Sprintf("%s: %s\n", retiredAtField, k.RetiredAt.UTC().Format(time.RFC3339Nano))), data...)
	}
	return data, nil
}

// RoundFailures returns the runs of a round that failed or erred, by server slug; a round claims
// at most its capacity, so max (its job count) bounds them.
func RoundFailures(ctx context.Context, db queries.DBTX, roundID int64, max int) ([]queries.Run, error) {
	id := roundID
	runs, err := ListRuns(ctx, db, queries.RunFilter{RoundID: &id, Outcomes: []string{"failed", "error"}, Limit: min(max+1, MaxListLimit)})
	if err != nil {
		return nil, fmt.Errorf("read the failures of round %d: %w", roundID, err)
	}
	slices.SortStableFunc(runs, func(a, b queries.Run) int { return strings.Compare(a.Server, b.Server) })
	return runs, nil
}

// PublicKey is a registered key as third parties fetch it: PKIX PEM, with its retirement.
type PublicKey struct {
	KeyID     string     `json:"key_id"`
	Algorithm string     `json:"algorithm"`
	CreatedAt time.Time  `json:"created_at"`
	RetiredAt *time.Time `json:"retired_at"`
	PEM       string     `json:"public_key_pem"`
}

// PublicKeys returns every registered key, retired ones included (they still verify the runs
// they signed before), oldest first.
func PublicKeys(ctx context.Context, db queries.DBTX) ([]PublicKey, error) {
	list, err := queries.ListSigningKeys(ctx, db)
	if err != nil {
		return nil, err
	}
	keys, err := queries.VerificationKeys(ctx, db)
	if err != nil {
		return nil, err
	}
	out := make([]PublicKey, 0, len(list))
	for _, k := range list {
		data, err := pkixPEM(keys[k.KeyID].Public)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", k.KeyID, err)
		}
		out = append(out, PublicKey{KeyID: k.KeyID, Algorithm: k.Algorithm, CreatedAt: k.CreatedAt, RetiredAt: k.RetiredAt,
			PEM: string(data)})
	}
	return out, nil
}

// pkixPEM writes a public key as a PKIX "BEGIN PUBLIC KEY" PEM block.
func pkixPEM(pub ed25519.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
