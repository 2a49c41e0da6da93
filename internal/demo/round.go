package demo

import (
	"context"
	"fmt"

	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/release"
)

// maxRounds stops a scenario that keeps finding due servers (it cannot, with every server on the
// 12-hour plan; a bug should not loop).
const maxRounds = 20

// roundFlags are the settings `run round --allow-private-targets --trigger cron` starts from, before
// the active release is laid under them: the fleet is on loopback.
func (e *env) roundFlags() probe.Settings {
	s := settings.Default()
	s.AllowPrivateTargets = true
	s.Trigger = probe.TriggerCron
	s.Version = e.opts.Version
	return s
}

// round runs one round as `run round` does: the active release's settings, the real checker,
// the throwaway key. prepare, when set, adjusts the round before it runs (the replay's order). It
// returns nil, nil when nothing is due.
func (e *env) round(ctx context.Context, prepare func(*probe.Round)) (*probe.Summary, error) {
	s, _, err := release.SettingsForRound(ctx, e.pool, release.RoundRequest{BinaryVersion: e.opts.Version, Flags: e.roundFlags()})
	if err != nil {
		return nil, err
	}
	plan, err := probe.Preview(ctx, e.pool, s, nil)
	if err != nil {
		return nil, err
	}
	if plan.Claimable == 0 {
		return nil, nil
	}
	e.rep.Say("$ probectl run round --allow-private-targets --trigger cron --signing-key demo.key   # %d due, capacity %d",
		plan.Claimable, plan.Capacity)
	r := &probe.Round{
		DB:       e.pool,
		Settings: s,
		Checker:  check.New(probe.CheckConfig(s)),
		Signer:   e.signer,
		Log:      e.log,
	}
	if prepare != nil {
		prepare(r)
	}
	sum, err := r.Run(ctx)
	if sum != nil {
		e.res.Rounds = append(e.res.Rounds, sum)
		e.rep.Round(sum)
	}
	if err != nil {
		return sum, fmt.Errorf("round %d: %w", len(e.res.Rounds), err)
	}
	return sum, nil
}

// rounds runs rounds until nothing is due, or n rounds when n > 0, and returns them.
func (e *env) rounds(ctx context.Context, n int, prepare func(*probe.Round)) ([]*probe.Summary, error) {
	var out []*probe.Summary
	for len(out) < maxRounds && (n == 0 || len(out) < n) {
		sum, err := e.round(ctx, prepare)
		if err != nil {
			return out, err
		}
		if sum == nil {
			break
		}
		out = append(out, sum)
	}
	return out, nil
}
