package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/probectl/probectl/internal/exit"
)

// docsDate is the date the man pages carry. It is fixed so that generating them twice gives the
// same bytes (the test that keeps docs/ current compares them); move it when a release changes
// what they say.
var docsDate = time.Date(2026, time.November, 30, 0, 0, 0, 0, time.UTC)

type docsOptions struct {
	Dir string
}

// newDocsCmd writes the man pages and the Markdown reference from this command tree. It is hidden:
// it is for `make generate` and the release, not for operators.
func newDocsCmd(root *cobra.Command) *cobra.Command {
	opts := &docsOptions{}
	cmd := &cobra.Command{
		Use:     "docs --dir DIR",
		Short:   "Write the man pages and the Markdown command reference",
		Long:    "Write a man page per command into DIR/man and a Markdown page per command into DIR/reference, from the command tree itself (make generate writes them into docs/).",
		Example: `  probectl docs --dir docs`,
		Hidden:  true,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDocs(root, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Dir, "dir", "", "directory to write man/ and reference/ into (required)")
	return cmd
}

func runDocs(root *cobra.Command, opts *docsOptions) error {
	if opts.Dir == "" {
		return exit.UsageError(fmt.Errorf("--dir: required"))
	}
	man, ref := filepath.Join(opts.Dir, "man"), filepath.Join(opts.Dir, "reference")
	for _, dir := range []string{man, ref} {
		// Stale pages of a command that no longer exists go with the rest.
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	root.DisableAutoGenTag = true
	header := &doc.GenManHeader{Title: "PROBECTL", Section: "1", Source: "probectl", Manual: "probectl manual", Date: &docsDate}
	if err := doc.GenManTree(root, header, man); err != nil {
		return fmt.Errorf("write man pages: %w", err)
	}
	if err := doc.GenMarkdownTree(root, ref); err != nil {
		return fmt.Errorf("write the command reference: %w", err)
	}
	return nil
}
