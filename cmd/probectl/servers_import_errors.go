package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/probectl/probectl/internal/directory"
)

// importError names the file in an import's error. Several bad rows are listed one a line, each
// as "FILE: line N: what", the form editors and grep jump to:
//
//	servers.csv: 3 bad rows, nothing imported
//	servers.csv: line 4: kind "grpc": must be mcp or http
//	...
//
// A document of the MCP registry, which only --format mcp-registry reads, is named as one.
func importError(file string, err error) error {
	if errors.Is(err, directory.ErrRegistryDocument) {
		return fmt.Errorf("%s: %w; import it with --format mcp-registry", file, err)
	}
	var rows *directory.RowErrors
	if !errors.As(err, &rows) || (len(rows.Rows) == 1 && !rows.Truncated) {
		return fmt.Errorf("%s: %w", file, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d bad rows, nothing imported", file, len(rows.Rows))
	if rows.Truncated {
		fmt.Fprintf(&b, " (the first %d; the rest of the file was not checked)", len(rows.Rows))
	}
	for _, r := range rows.Rows {
		fmt.Fprintf(&b, "\n%s: %s", file, r)
	}
	return errors.New(b.String())
}
