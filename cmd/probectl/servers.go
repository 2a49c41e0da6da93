package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/probectl/probectl/probe/check"
	"github.com/probectl/probectl/queries"
)

func newServersCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "servers <command>",
		Short: "Manage the directory of servers to probe",
		Long: `Manage the directory of servers that rounds check: import a CSV or JSON-lines file, add one
server, list them, or record a maintainer's claim so that a server is checked again at once. Follow
the MCP registry's API with 'servers sync' (docs/registry.md).`,
		Example: `  probectl servers import servers.csv
  probectl servers sync --registry https://registry.modelcontextprotocol.io
  probectl servers add --slug weather --url https://weather.example/mcp --kind mcp
  probectl servers list -o json
  probectl servers recheck weather
  probectl servers show weather
  probectl servers pause weather --reason "maintainer asked"`,
	}
	cmd.AddCommand(
		newServersImportCmd(f),
		newServersAddCmd(f),
		newServersListCmd(f),
		newServersRecheckCmd(f),
		newServersShowCmd(f),
		newServersSyncCmd(f),
	)
	cmd.AddCommand(newServersStatusCmds(f)...)
	return cmd
}

// serverJSON is the documented JSON shape of a server.
type serverJSON struct {
	ID                   int64      `json:"id"`
	Slug                 string     `json:"slug"`
	URL                  string     `json:"url"`
	Kind                 string     `json:"kind"`
	Transport            *string    `json:"transport"` // mcp: streamable-http or sse; null for http
	Plan                 string     `json:"plan"`
	CheckIntervalSeconds float64    `json:"check_interval_seconds"`
	Status               string     `json:"status"`
	MaintainerClaimedAt  *time.Time `json:"maintainer_claimed_at"`
	NextCheckAt          time.Time  `json:"next_check_at"`
	CreatedAt            time.Time  `json:"created_at"`
}

func toServerJSON(s queries.Server) serverJSON {
	return serverJSON{
		ID: s.ID, Slug: s.Slug, URL: check.RedactURL(s.EndpointURL), Kind: s.Kind, Plan: s.Plan,
		CheckIntervalSeconds: s.CheckInterval.Seconds(), Status: s.Status,
		MaintainerClaimedAt: s.MaintainerClaimedAt, NextCheckAt: s.NextCheckAt, CreatedAt: s.CreatedAt,
		Transport: s.Transport,
	}
}

// toServersJSON is a list of servers as JSON: [] when there is none.
func toServersJSON(servers []queries.Server) []serverJSON {
	out := make([]serverJSON, 0, len(servers))
	for _, s := range servers {
		out = append(out, toServerJSON(s))
	}
	return out
}
