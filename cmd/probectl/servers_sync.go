package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
	"github.com/probectl/probectl/queries"
)

// shownChanges is how many changes the table lists; -o json lists them all.
const shownChanges = 10

type serversSyncOptions struct {
	f            *factory
	Registry     string
	Full         bool
	DryRun       bool
	Every        time.Duration
	EverySet     bool
	Status       bool
	AllowPrivate bool
	MassDelist   bool
	Actor        string
}

func newServersSyncCmd(f *factory) *cobra.Command {
	opts := &serversSyncOptions{f: f}
	cmd := &cobra.Command{
		Use:   "sync --registry URL [--full] [--dry-run] [--every DURATION] | --status",
		Short: "Follow the MCP registry's API: add, update and delist servers as it does",
		Long: `Read the MCP registry at --registry (its base URL: GET URL/v0/servers?limit=100&cursor=...,
following metadata.nextCursor to the last page) and mirror it into the directory, in one
transaction: every latest, active entry's remotes are added or updated exactly as
'servers import --format mcp-registry' does (same slug, same validation, same refusal of a
registry name whose slug is another's server or one added by hand).

  incremental  the next sync of a registry sends updated_since= the newest updatedAt seen, so
               only changed entries are read; --full reads everything again
  deleted      an entry whose status is deleted, or that a --full sync no longer lists, has its
               servers delisted with the reason "registry: deleted" (recorded with who, as for
               'servers delist'); a listed-again entry's servers are listed again, unless an
               operator delisted them
  bounded      a sync that would delist more than 10 servers and more than 10% of the registry's
               is refused (exit 1, nothing applied, the error kept for --status) unless
               --allow-mass-delist; a full listing with no entry never delists anything
  deprecated   marked and kept (still checked)
  moved        a remote whose URL changed updates the server in place: id and history stay
  by hand      a server added by hand is never touched by a sync

Bounds against the registry: at most 1,000 pages, 10 MiB a response, 64 MiB in all, 100,000
entries, 16 remotes an entry, 30 s a request, 3 redirects; a cursor already followed is a loop. A page answered with an HTTP error, a
body that is not the list response, or an entry that must be refused (a remote URL that is not
http or https, two registry names for one slug) ends the sync with nothing applied and exit 1,
naming the page (or the entry); the failure is recorded for --status. The registry is reached
through the same SSRF guard as checks: a loopback or private address only with
--allow-private-targets.

--every records a schedule instead of syncing now: 'probectl worker''s leader then syncs the
registry that often (5m to 7d; --every 0 removes the schedule). --status shows the last sync of
each registry: when, pages, added, updated, delisted, errors. --dry-run prints what would change
and changes nothing.`,
		Example: `  probectl servers sync --registry https://registry.modelcontextprotocol.io
  probectl servers sync --registry https://registry.modelcontextprotocol.io --dry-run -o json
  probectl servers sync --registry https://registry.modelcontextprotocol.io --full
  probectl servers sync --registry https://registry.modelcontextprotocol.io --every 1h
  probectl servers sync --status`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.EverySet = cmd.Flags().Changed("every")
			return runServersSync(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Registry, "registry", "", "the registry's base URL (e.g. https://registry.modelcontextprotocol.io)")
	fl.BoolVar(&opts.Full, "full", false, "read every entry, not only those changed since the last sync; delist what is no longer listed")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "read the registry and print what would change; change nothing")
	durationVar(fl, &opts.Every, "every", 0, "record a schedule: probectl worker syncs the registry this often (5m to 7d; 0 removes it)")
	fl.BoolVar(&opts.Status, "status", false, "show the last sync of each registry (or of --registry) and its schedule")
	fl.BoolVar(&opts.AllowPrivate, "allow-private-targets", false, "let the sync reach a registry on a loopback or private address")
	fl.BoolVar(&opts.MassDelist, "allow-mass-delist", false, fmt.Sprintf(
		"let the sync delist more than %d servers and %d%% of the registry's (checked: the registry really removed them)",
		directory.MassDelistMin, directory.MassDelistPercent))
	fl.StringVar(&opts.Actor, "actor", "", "who the delistings are recorded as made by (default $USER)")
	return cmd
}

func runServersSync(ctx context.Context, opts *serversSyncOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	if opts.Status {
		if opts.EverySet || opts.Full || opts.DryRun || opts.MassDelist {
			return exit.UsageError(errors.New("--status: shows the sync state; it takes no --every, --full, --dry-run or --allow-mass-delist"))
		}
		return syncStatus(ctx, opts, format)
	}
	if opts.Registry == "" {
		return exit.UsageError(errors.New("--registry: required (the registry's base URL), or --status"))
	}
	// The input is judged before the database is asked: bad flags exit 2 whether it answers or not.
	if _, err := directory.RegistryBaseURL(opts.Registry); err != nil {
		return syncFlagError(err)
	}
	if opts.EverySet {
		if opts.Full || opts.DryRun || opts.MassDelist {
			return exit.UsageError(errors.New("--every: records a schedule; it takes no --full, --dry-run or --allow-mass-delist"))
		}
		if err := directory.CheckSyncEvery(opts.Every); err != nil {
			return syncFlagError(err)
		}
		return syncSchedule(ctx, opts, format)
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	res, err := directory.Sync(ctx, pool, directory.SyncOptions{RegistryURL: opts.Registry, Full: opts.Full,
		DryRun: opts.DryRun, AllowPrivate: opts.AllowPrivate, AllowMassDelist: opts.MassDelist, Actor: actorFrom(f, opts.Actor)})
	if err != nil {
		return syncFlagError(err)
	}
	if res.Changes == nil {
		res.Changes = []directory.RegistryChange{}
	}
	return render.Output(f.IO.Out, format, render.View{JSON: res, Text: func() error { return renderSync(f.IO.Out, f.IO, res) }})
}

// syncFlagError says a domain refusal of the sync's input as its flag.
func syncFlagError(err error) error {
	var bad *directory.RegistryURLError
	var every *directory.SyncEveryError
	switch {
	case errors.As(err, &bad):
		return exit.UsageError(fmt.Errorf("--registry: %w", bad))
	case errors.As(err, &every):
		return exit.UsageError(fmt.Errorf("--every: must be %s to %s (0 removes the schedule), got %s",
			render.Duration(directory.MinSyncEvery), render.Duration(directory.MaxSyncEvery), render.Duration(every.Every)))
	}
	var mass *directory.MassDelistError
	if errors.As(err, &mass) && !mass.Empty {
		return exit.FoundError(fmt.Errorf("%w (--dry-run --allow-mass-delist -o json lists them; if the registry really removed them: --allow-mass-delist)", err))
	}
	var page *directory.PageError
	if errors.As(err, &page) && page.ExitCode() == exit.Usage {
		return exit.UsageError(fmt.Errorf("%w (a registry on a private network: --allow-private-targets)", err))
	}
	return err
}

func renderSync(w io.Writer, s *render.Streams, res directory.SyncResult) error {
	since := "full"
	if res.UpdatedSince != nil {
		since = "changed since " + s.Time(*res.UpdatedSince)
	}
	verb := "synced"
	if res.DryRun {
		verb = "would sync (dry run, nothing changed)"
	}
	fmt.Fprintf(w, "%s %s: %s, %s, %s\n", verb, render.Printable(res.RegistryURL), since,
		countOf(res.Pages, "page", "pages"), countOf(res.Entries, "entry", "entries"))
	t := render.NewTable(w, "ADDED", "UPDATED", "DELISTED", "UNCHANGED")
	t.Row(res.Added, res.Updated, res.Delisted, res.Unchanged)
	if err := t.Render(); err != nil {
		return err
	}
	if len(res.Changes) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t = render.NewTable(w, "CHANGE", "SLUG", "REGISTRY NAME", "FROM", "TO")
	for i, c := range res.Changes {
		if i == shownChanges {
			break
		}
		t.Row(c.Change, c.Slug, render.Printable(c.Name), dash(render.Printable(c.From)), dash(render.Printable(c.To)))
	}
	if err := t.Render(); err != nil {
		return err
	}
	if more := len(res.Changes) - shownChanges; more > 0 {
		_, err := fmt.Fprintf(w, "... and %d more change(s); -o json lists them all\n", more)
		return err
	}
	return nil
}

func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func syncSchedule(ctx context.Context, opts *serversSyncOptions, format string) error {
	f := opts.f
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	base, err := directory.ScheduleSync(ctx, pool, opts.Registry, opts.Every, actorFrom(f, opts.Actor), nil)
	if err != nil {
		return syncFlagError(err)
	}
	out := struct {
		RegistryURL  string   `json:"registry_url"`
		EverySeconds *float64 `json:"every_seconds"`
	}{base, everySeconds(opts.Every)}
	return render.Output(f.IO.Out, format, render.View{JSON: out, Text: func() error {
		if opts.Every == 0 {
			_, err := fmt.Fprintf(f.IO.Out, "%s: schedule removed; it syncs only by hand\n", render.Printable(base))
			return err
		}
		_, err := fmt.Fprintf(f.IO.Out, "%s: probectl worker syncs it every %s (the first sync when a worker's leader next looks)\n",
			render.Printable(base), render.Duration(opts.Every))
		return err
	}})
}

func everySeconds(d time.Duration) *float64 {
	if d == 0 {
		return nil
	}
	s := d.Seconds()
	return &s
}

// registrySyncJSON is the documented JSON shape of one registry's sync state.
type registrySyncJSON struct {
	RegistryURL     string     `json:"registry_url"`
	EverySeconds    *float64   `json:"every_seconds"`
	ScheduledBy     *string    `json:"scheduled_by"`
	StartedAt       *time.Time `json:"started_at"`
	FinishedAt      *time.Time `json:"finished_at"`
	NewestUpdatedAt *time.Time `json:"newest_updated_at"`
	Full            bool       `json:"full"`
	Pages           int        `json:"pages"`
	Added           int        `json:"added"`
	Updated         int        `json:"updated"`
	Delisted        int        `json:"delisted"`
	Unchanged       int        `json:"unchanged"`
	Errors          int        `json:"errors"`
	LastError       *string    `json:"last_error"`
	LastErrorAt     *time.Time `json:"last_error_at"`
}

func toRegistrySyncJSON(s queries.RegistrySync) registrySyncJSON {
	var every *float64
	if s.Every != nil {
		every = everySeconds(*s.Every)
	}
	return registrySyncJSON{RegistryURL: s.RegistryURL, EverySeconds: every, ScheduledBy: s.ScheduledBy,
		StartedAt: s.StartedAt, FinishedAt: s.FinishedAt, NewestUpdatedAt: s.NewestUpdatedAt, Full: s.FullSync,
		Pages: s.Pages, Added: s.Added, Updated: s.Updated, Delisted: s.Delisted, Unchanged: s.Unchanged,
		Errors: s.Errors, LastError: s.LastError, LastErrorAt: s.LastErrorAt}
}

func syncStatus(ctx context.Context, opts *serversSyncOptions, format string) error {
	f := opts.f
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	states, err := directory.SyncStatus(ctx, pool, opts.Registry)
	if err != nil {
		return syncFlagError(err)
	}
	out := make([]registrySyncJSON, len(states))
	for i, s := range states {
		out[i] = toRegistrySyncJSON(s)
	}
	return render.Output(f.IO.Out, format, render.View{JSON: out, Text: func() error { return writeSyncStatus(f.IO, states) }})
}

// writeSyncStatus lists each registry's schedule and last sync.
func writeSyncStatus(io *render.Streams, states []queries.RegistrySync) error {
	if len(states) == 0 {
		_, err := fmt.Fprintln(io.Out, "no registry synced or scheduled yet (probectl servers sync --registry URL)")
		return err
	}
	t := render.NewTable(io.Out, "REGISTRY", "EVERY", io.TimeHeader("LAST SYNC"), "FULL", "PAGES", "ADDED",
		"UPDATED", "DELISTED", "ERRORS", "LAST ERROR")
	for _, s := range states {
		every, last, lastErr := "-", "never", "-"
		if s.Every != nil {
			every = render.Duration(*s.Every)
		}
		if s.FinishedAt != nil {
			last = io.Time(*s.FinishedAt)
		}
		if s.LastError != nil {
			lastErr = render.Printable(*s.LastError)
		}
		t.Row(render.Printable(s.RegistryURL), every, last, s.FullSync, s.Pages, s.Added, s.Updated, s.Delisted, s.Errors, lastErr)
	}
	return t.Render()
}
