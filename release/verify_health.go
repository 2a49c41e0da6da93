package release

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/probectl/probectl/queries"
)

// CheckHealth is the check of the release's ok share against the release before it.
const CheckHealth = "health"

// DefaultMaxOkDrop is how many points the ok share may drop against the baseline before the
// health check fails; MaxMaxOkDrop bounds it (a share is 0 to 100 points).
const (
	DefaultMaxOkDrop = 10.0
	MaxMaxOkDrop     = 100.0
)

// Health is the health check's figures, as post-deploy analysis (Argo Rollouts' analysis, Kayenta's
// canary judge) compares a new version's success rate with the old one's: the ok share of the
// release's rounds against the baseline, the release active before it, over the servers both
// checked (each server's last job under the baseline before the release went live). Shares are 0
// to 1; nil when there is nothing to divide.
type Health struct {
	// Jobs and OK are the jobs of the release's rounds with an outcome (ok, failed or error), and
	// the ok ones among them; OkShare is OK / Jobs.
	Jobs    int      `json:"jobs"`
	OK      int      `json:"ok"`
	OkShare *float64 `json:"ok_share"`
	// BaselineReleaseID is the release active before this one (nil: a first release).
	BaselineReleaseID *int64 `json:"baseline_release_id"`
	// CommonServers are the servers of the release's rounds the baseline also checked; the two
	// shares below are over them only.
	CommonServers     int      `json:"common_servers"`
	CommonOkShare     *float64 `json:"common_ok_share"`
	BaselineOkShare   *float64 `json:"baseline_ok_share"`
	DropPoints        *float64 `json:"drop_points"`
	MaxOkDropPoints   float64  `json:"max_ok_drop_points"`
	BaselineAvailable bool     `json:"baseline_available"`
}

func share(ok, n int) *float64 {
	if n == 0 {
		return nil
	}
	s := float64(ok) / float64(n)
	return &s
}

// checkHealth compares the ok share of the release's rounds with the baseline's over the same
// servers. Without a baseline (a first release, or no server both checked) it reports the share
// and passes: no data to compare is not a defect of the release, and must not hold the verdict.
func checkHealth(ctx context.Context, tx pgx.Tx, rep *Report, roundIDs []int64, baseline *int64, since time.Time,
	maxDrop float64) (Check, Health, error) {
	h := Health{BaselineReleaseID: baseline, MaxOkDropPoints: maxDrop}
	servers, err := queries.VerifyHealth(ctx, tx, roundIDs, baseline, since)
	if err != nil {
		return Check{}, h, err
	}
	var commonJobs, commonOK, baseOK int
	var worse []string
	for _, s := range servers {
		h.Jobs += s.Jobs
		h.OK += s.OK
		if s.BaselineOutcome == nil {
			continue
		}
		h.CommonServers++
		commonJobs += s.Jobs
		commonOK += s.OK
		if *s.BaselineOutcome == "ok" {
			baseOK++
			if s.OK < s.Jobs {
				worse = append(worse, fmt.Sprintf("%s: ok under release #%d, %d of %d not ok now", s.Slug, *baseline,
					s.Jobs-s.OK, s.Jobs))
			}
		}
	}
	h.OkShare = share(h.OK, h.Jobs)
	if h.Jobs == 0 {
		return inconclusive(CheckHealth, fmt.Sprintf("no job of the %d round(s) has an outcome yet: no ok share to judge",
			len(rep.Rounds))), h, nil
	}
	own := fmt.Sprintf("ok share %s (%d of %d jobs)", percent(*h.OkShare), h.OK, h.Jobs)
	switch {
	case baseline == nil:
		return pass(CheckHealth, own+"; no baseline: no release was active before this one"), h, nil
	case h.CommonServers == 0:
		return pass(CheckHealth, fmt.Sprintf("%s; no baseline: release #%d checked none of these servers", own, *baseline)), h, nil
	}
	h.BaselineAvailable = true
	h.CommonOkShare, h.BaselineOkShare = share(commonOK, commonJobs), share(baseOK, h.CommonServers)
	drop := math.Round((*h.BaselineOkShare-*h.CommonOkShare)*1000) / 10 // points, to a tenth
	h.DropPoints = &drop
	detail := fmt.Sprintf("%s; over the %d server(s) release #%d also checked: %s now, %s in its last checks of them",
		own, h.CommonServers, *baseline, percent(*h.CommonOkShare), percent(*h.BaselineOkShare))
	if drop > maxDrop {
		return fail(CheckHealth, fmt.Sprintf("%s: down %.1f points, more than the %.1f allowed (--max-ok-drop)",
			detail, drop, maxDrop), worse), h, nil
	}
	return pass(CheckHealth, fmt.Sprintf("%s: %s, within the %.1f points allowed", detail, change(drop), maxDrop)), h, nil
}

func percent(s float64) string { return fmt.Sprintf("%.1f%%", s*100) }

func change(drop float64) string {
	switch {
	case drop > 0:
		return fmt.Sprintf("down %.1f points", drop)
	case drop < 0:
		return fmt.Sprintf("up %.1f points", -drop)
	}
	return "unchanged"
}
