package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/internal/exit"
	"github.com/probectl/probectl/internal/render"
)

// statusVerb is one of pause, resume and delist: the same command, setting another status.
type statusVerb struct {
	use, status, short, long, example string
}

var statusVerbs = []statusVerb{
	{use: "pause", status: "paused", short: "Stop checking servers until they are resumed",
		long: `Pause each server named: no round claims it from now on (a job already in flight finishes, and
does not schedule the next check). The change is recorded with who made it (--actor, default
$USER) and --reason; 'servers show' shows it. 'servers resume' makes it due again at once.`,
		example: `  probectl servers pause weather --reason "maintainer asked: migrating hosts until Friday"
  probectl servers pause weather weather-eu weather-us --reason "one owner, migrating all three"
  probectl servers show weather`},
	{use: "resume", status: "active", short: "Check paused or delisted servers again, at once",
		long: `Make each paused or delisted server named active again: it is due at once, so the next round
claims it (unless the spacing guard holds it: a job within the minimum spacing). Recorded with who
and why.`,
		example: `  probectl servers resume weather --reason "hosts migrated"
  probectl servers resume weather weather-eu weather-us --reason "hosts migrated"
  probectl run round --dry-run`},
	{use: "delist", status: "delisted", short: "Take servers out of the directory's checks for good",
		long: `Delist each server named: it is never claimed again unless resumed, and its runs are kept (its
history stays readable with 'servers show' and 'runs list'). Recorded with who and why.`,
		example: `  probectl servers delist old-weather --reason "endpoint gone since March, owner unreachable"
  probectl servers delist old-weather old-clock --reason "the owner closed both"`},
}

type serversStatusOptions struct {
	f      *factory
	Verb   statusVerb
	Slugs  []string
	Reason string
	Actor  string
}

// statusAllOrNone ends every status verb's Long: what several slugs do.
var statusAllOrNone = fmt.Sprintf(`

Several servers are changed all or none, in one transaction: a slug that is not in the
directory is named, nothing is changed, and probectl exits 2. At most %d slugs at once; a slug
named twice counts once. With -o json, one slug prints its change as an object, several print an
array of them.`, directory.MaxStatusChange)

func newServersStatusCmds(f *factory) []*cobra.Command {
	var cmds []*cobra.Command
	for _, v := range statusVerbs {
		opts := &serversStatusOptions{f: f, Verb: v}
		cmd := &cobra.Command{
			Use:     v.use + " SLUG... --reason TEXT",
			Short:   v.short,
			Long:    v.long + statusAllOrNone,
			Example: v.example,
			Args:    cobra.MinimumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				opts.Slugs = args
				return runServersStatus(cmd.Context(), opts)
			},
		}
		cmd.Flags().StringVar(&opts.Reason, "reason", "", fmt.Sprintf("why (required, at most %d characters): recorded with the change", directory.MaxReasonChars))
		cmd.Flags().StringVar(&opts.Actor, "actor", "", "who makes the change (default $USER)")
		cmds = append(cmds, cmd)
	}
	return cmds
}

// statusChangeJSON is the documented JSON shape of pause, resume and delist.
type statusChangeJSON struct {
	Server  string `json:"server"`
	From    string `json:"from"`
	To      string `json:"to"`
	Changed bool   `json:"changed"`
}

func runServersStatus(ctx context.Context, opts *serversStatusOptions) error {
	f := opts.f
	format, err := f.OutputFormat("table", "json")
	if err != nil {
		return err
	}
	if opts.Reason == "" {
		return exit.UsageError(errors.New("--reason: required: say why, it is recorded with the change"))
	}
	if err := directory.CheckStatusChange(opts.Slugs); err != nil {
		return err
	}
	pool, err := f.Pool(ctx)
	if err != nil {
		return err
	}
	changes, err := directory.SetStatuses(ctx, pool, opts.Slugs, opts.Verb.status, opts.Reason, actorFrom(f, opts.Actor), nil)
	var invalid *directory.InvalidError
	if errors.As(err, &invalid) {
		return exit.UsageError(fmt.Errorf("--%w", invalid))
	}
	if err != nil {
		return err
	}
	// One slug keeps the shape it always had (an object); several are an array.
	list := make([]statusChangeJSON, 0, len(changes))
	for _, c := range changes {
		list = append(list, statusChangeJSON{Server: c.Slug, From: c.From, To: c.To, Changed: c.Changed})
	}
	var out any = list
	if len(opts.Slugs) == 1 {
		out = list[0]
	}
	return render.Output(f.IO.Out, format, render.View{
		JSON: out,
		Text: func() error {
			for _, c := range changes {
				if _, err := fmt.Fprintln(f.IO.Out, statusChangeWords(c)); err != nil {
					return err
				}
			}
			return nil
		},
	})
}

// statusChangeWords says what pausing, delisting or resuming a server did.
func statusChangeWords(c directory.StatusChange) string {
	msg := fmt.Sprintf("%s: %s -> %s", c.Slug, c.From, c.To)
	switch {
	case !c.Changed:
		msg = fmt.Sprintf("%s is %s already: nothing changed", c.Slug, c.To)
	case c.To == "active":
		msg += ": due at once"
	default:
		msg += ": no round claims it until 'probectl servers resume " + c.Slug + "'"
	}
	return msg
}
