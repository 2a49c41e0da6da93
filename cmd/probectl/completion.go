package main

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/internal/completion"
	"github.com/probectl/probectl/internal/directory"
	"github.com/probectl/probectl/internal/history"
	"github.com/probectl/probectl/probe/settings"
	"github.com/probectl/probectl/queries"
)

// completionTimeout bounds a completion's trip to the database: a shell waits for it on every Tab,
// so a slow or unreachable database completes nothing rather than hanging the prompt.
const completionTimeout = time.Second

// flagValues are the values shells complete for a flag of that name, on the commands whose path
// starts with the prefix ("" for every command).
var flagValues = append([]flagValue{
	{"probectl servers", "kind", directory.Kinds},
	{"probectl servers", "plan", directory.Plans},
	{"probectl servers", "status", directory.Statuses},
	// runs list --outcome: the outcomes a run can have, the list the flag checks against.
	{"probectl runs", "outcome", history.Outcomes},
}, settingValues()...)

type flagValue struct {
	prefix, flag string
	values       []string
}

// settingValues are the round settings that take one of a list (settings.Fields' Values), for
// every command that has their flag.
func settingValues() []flagValue {
	var out []flagValue
	for _, fd := range settings.Fields {
		if len(fd.Values) > 0 {
			out = append(out, flagValue{flag: fd.Flag, values: fd.Values})
		}
	}
	return out
}

// outputFormats are the -o values the command at path takes, as its run checks them
// (f.OutputFormat): table and json, csv too for the audits and runs list, only table for keys
// export (a PEM block). TestEveryCommandIsOfferedTheOutputFormatsItTakes holds the two together.
func outputFormats(path string) []string {
	switch {
	case strings.HasPrefix(path, "probectl audit "), path == "probectl runs list":
		return []string{"table", "json", "csv"}
	case path == "probectl keys export",
		strings.HasPrefix(path, "probectl receivers ") && path != "probectl receivers list":
		return []string{"table"}
	}
	return []string{"table", "json"}
}

// argCompleters complete a command's first argument from the database, by command path. A command
// added later under one of these paths (servers show, keys export) completes without more code.
var argCompleters = map[string]func(ctx context.Context, db queries.DBTX, prefix string) ([]completion.Candidate, error){
	"probectl servers recheck":  completion.Slugs,
	"probectl servers show":     completion.Slugs,
	"probectl servers pause":    completion.Slugs,
	"probectl servers resume":   completion.Slugs,
	"probectl servers delist":   completion.Slugs,
	"probectl keys retire":      completion.KeyIDs,
	"probectl keys export":      completion.KeyIDs,
	"probectl receivers remove": completion.Receivers,
	"probectl receivers test":   completion.Receivers,
}

// everyArg are the commands of argCompleters that take many such arguments: each argument
// completes, without the ones already named.
var everyArg = map[string]bool{
	"probectl servers recheck": true,
	"probectl servers pause":   true,
	"probectl servers resume":  true,
	"probectl servers delist":  true,
}

// addCompletions teaches shells the values of the tree's flags and arguments: -o's formats, the
// fixed values of --kind, --plan, --status, --finish and --outcome, and slugs and key ids from the
// database.
func addCompletions(root *cobra.Command, f *factory) {
	_ = root.RegisterFlagCompletionFunc("output", func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return outputFormats(cmd.CommandPath()), cobra.ShellCompDirectiveNoFileComp
	})
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		path := cmd.CommandPath()
		for _, fv := range flagValues {
			if cmd.LocalFlags().Lookup(fv.flag) != nil && strings.HasPrefix(path, fv.prefix) {
				_ = cmd.RegisterFlagCompletionFunc(fv.flag, cobra.FixedCompletions(fv.values, cobra.ShellCompDirectiveNoFileComp))
			}
		}
		if find, ok := argCompleters[path]; ok && cmd.ValidArgsFunction == nil {
			cmd.ValidArgsFunction = f.completeArg(find, everyArg[path])
		}
		for _, c := range cmd.Commands() {
			walk(c)
		}
	}
	walk(root)
}

// completeArg completes a command's first argument with what find returns, or each argument
// when every (leaving out those already given). It completes nothing, quietly, when no database is configured, when it cannot be reached or answer within
// completionTimeout, or when the schema lacks what find reads.
func (f *factory) completeArg(find func(context.Context, queries.DBTX, string) ([]completion.Candidate, error), every bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		const none = cobra.ShellCompDirectiveNoFileComp
		if len(args) > 0 && !every {
			return nil, none
		}
		if url, _ := resolveURL(f.DatabaseURL, f.Getenv); url == "" {
			return nil, none
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		ctx, cancel := context.WithTimeout(ctx, completionTimeout)
		defer cancel()
		pool, err := f.RawPool(ctx)
		if err != nil {
			return nil, none
		}
		found, err := find(ctx, pool, toComplete)
		if err != nil {
			return nil, none
		}
		out := make([]cobra.Completion, 0, len(found))
		for _, c := range found {
			if slices.Contains(args, c.Value) {
				continue
			}
			out = append(out, cobra.CompletionWithDesc(c.Value, c.Description))
		}
		return out, none
	}
}
