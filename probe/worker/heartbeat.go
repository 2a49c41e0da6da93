package worker

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/probectl/probectl/probe"
	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

// process is one worker process: its id among all workers, and the invocations it runs now,
// which its heartbeat reports (probectl_workers) and keeps alive (probe_rounds.heartbeat_at).
type process struct {
	cfg  Config
	id   string
	host string

	mu     sync.Mutex
	rounds map[int64]int // round id -> invocations of it running here
	// decodes are the process's slots for large answers, shared by its invocations' checkers.
	decodes *check.DecodeSlots
	// warnedRelease is the active release of another version this worker last said it does not
	// run rounds of (0: none), so that it says so once, not every tick.
	warnedRelease int64
	// said holds the spool replay's problems this process has logged (at most maxSaid), so
	// that a file that stays (another user's, one whose set-aside failed) is said once, not
	// every beat.
	said map[string]bool
}

// maxSaid bounds process.said: past it, it starts again (a problem is said again, once).
const maxSaid = 1000

func newProcess(cfg Config) *process {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return &process{cfg: cfg, id: ClientID(), host: host, rounds: map[int64]int{}, decodes: check.NewDecodeSlots(),
		said: map[string]bool{}}
}

// sayOnce logs each problem (what: the log's message) the first time this process meets it.
func (p *process) sayOnce(what string, problems []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pr := range problems {
		if p.said[pr] {
			continue
		}
		if len(p.said) >= maxSaid {
			clear(p.said)
		}
		p.said[pr] = true
		p.cfg.Log.Warn(what, "problem", pr)
	}
}

// running counts an invocation of round id as running here until the returned done is called.
func (p *process) running(id int64) (done func()) {
	p.mu.Lock()
	p.rounds[id]++
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.rounds[id]--; p.rounds[id] == 0 {
			delete(p.rounds, id)
		}
	}
}

// snapshot is the rounds whose invocations run here and how many invocations run.
func (p *process) snapshot() (ids []int64, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, k := range p.rounds {
		ids = append(ids, id)
		n += k
	}
	return ids, n
}

// beat writes the heartbeat now and then every queries.RoundHeartbeatEvery until stop is called
// (stop waits for a beat under way). It goes on after ctx ends, while River's grace runs: the
// rounds whose checks are finishing are still alive.
func (p *process) beat(ctx context.Context) (stop func()) {
	every := queries.RoundHeartbeatEvery
	if p.cfg.heartbeatEvery > 0 {
		every = p.cfg.heartbeatEvery
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			bctx, bcancel := context.WithTimeout(ctx, every)
			p.beatOnce(bctx)
			bcancel()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
	}
}

// usableSpoolDir is the worker's spool directory, made again if it was removed under the worker;
// "" when there is none, or when it cannot be used: that is said once (else the next finish that
// cannot reach the database finds nowhere to spool), and nothing else of the spool is read at this
// beat (each read would say it again).
func (p *process) usableSpoolDir() string {
	dir := p.cfg.SpoolDir
	if dir == "" {
		return ""
	}
	if err := probe.PrepareSpoolDir(dir, p.cfg.Log); err != nil {
		p.sayOnce("the spool directory cannot be used: a result the database cannot take now would be lost", []string{err.Error()})
		return ""
	}
	return dir
}

// beatOnce is one heartbeat: the worker's row (with its spool's depth), the heartbeat of the
// queued rounds it runs or that wait for a worker, and the removal of workers a day silent; then,
// when files wait in the spool, a replay with what is left of the beat's time (the database may
// be back; a file a live invocation writes is skipped). The writes come first, so that a long
// replay never costs the heartbeat. A failed write is logged; the next beat tries again.
func (p *process) beatOnce(ctx context.Context) {
	log := p.cfg.Log
	b := queries.WorkerBeat{ID: p.id, Host: p.host, PID: os.Getpid(), Version: p.cfg.Version, MaxWorkers: p.cfg.MaxWorkers}
	dir := p.usableSpoolDir()
	if dir != "" {
		sp, err := probe.InspectSpool(dir)
		if err != nil {
			log.Warn("read the spool for the heartbeat", "dir", dir, "err", err)
		}
		b.SpoolFiles, b.SpoolResults, b.SpoolSetAside = sp.Files, sp.Results, sp.SetAside
	}
	ids, n := p.snapshot()
	b.InvocationsRunning = n
	if err := queries.UpsertWorker(ctx, p.cfg.Pool, b); err != nil && ctx.Err() == nil {
		log.Warn("worker heartbeat failed; the next one tries again", "err", err)
	}
	if _, err := queries.BeatWorkerRounds(ctx, p.cfg.Pool, ids); err != nil && ctx.Err() == nil {
		log.Warn("round heartbeat failed; the next one tries again", "rounds", ids, "err", err)
	}
	if err := queries.ForgetStaleWorkers(ctx, p.cfg.Pool); err != nil && ctx.Err() == nil {
		log.Warn("remove stale workers", "err", err)
	}
	if b.SpoolFiles > 0 { // a file holding only a line cut short counts no result: it is set aside
		rec, err := probe.Recover(ctx, p.cfg.Pool, dir, log)
		if err == nil && rec.Stored+rec.Files > 0 {
			log.Info("spool replayed", "dir", dir, "stored", rec.Stored, "already_stored", rec.AlreadyStored, "left", rec.Left)
		}
		p.sayOnce("spool replay", rec.Problems)
		rec.LogSetAside(log)
	}
	if dir != "" {
		// After a failover, what this machine's invocations stored and the new primary lacks.
		jr, err := probe.ReplayJournals(ctx, p.cfg.Pool, dir, log)
		if err != nil && ctx.Err() == nil {
			log.Warn("replay the failover journals; the next heartbeat tries again", "err", err)
		}
		jr.LogSetAside(log)
	}
}

// stopped records a clean stop, so status shows this worker stopped rather than dead.
func (p *process) stopped() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := queries.StopWorker(ctx, p.cfg.Pool, p.id); err != nil {
		p.cfg.Log.Warn("record the worker's stop", "err", err)
	}
}

// tickJob is the periodic job's constructor: a tick job only when a tick has work (a queued
// round to close, or a round due), so that an idle leader inserts nothing. If the check fails,
// the tick is inserted anyway: the tick decides again under its lock, and says what failed.
//
// An active release of another version starts nothing here: no tick is inserted for it (each
// would fail), and the worker says so once per release, not every second.
func (p *process) tickJob() (river.JobArgs, *river.InsertOpts) {
	ctx, cancel := context.WithTimeout(context.Background(), tickCheckTimeout)
	defer cancel()
	due, other, err := tickHasWork(ctx, p.cfg.Pool, p.cfg.Version)
	p.otherVersion(other)
	if err == nil && !due {
		return nil, nil
	}
	return tickArgs{}, &river.InsertOpts{Queue: Queue, MaxAttempts: 1}
}

// otherVersion logs, once per release, that the active release is of another version than this
// worker's (sched; nil: it is not), so its schedule starts no round here.
func (p *process) otherVersion(sched *queries.Schedule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if sched == nil {
		p.warnedRelease = 0
		return
	}
	if p.warnedRelease == sched.ReleaseID {
		return
	}
	p.warnedRelease = sched.ReleaseID
	p.cfg.Log.Warn("the active release is of another version: this worker starts none of its rounds (it still runs "+
		"invocations queued for it); replace it with a worker of that version, or roll back",
		"release", sched.ReleaseID, "release_version", sched.Version, "worker_version", p.cfg.Version)
}
