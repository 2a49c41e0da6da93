#!/bin/sh
# Writes what the release ships beside the binary and does not commit: shell completions
# (completions/) and gzipped man pages (manpages/, from the committed docs/man). goreleaser runs it
# as a before hook; the SBOM tool is installed here too, pinned, into bin/.
set -eu
cd "$(dirname "$0")/.."
rm -rf completions manpages
mkdir -p completions manpages bin
go build -o bin/probectl-host ./cmd/probectl
for shell in bash zsh fish; do
	bin/probectl-host completion "$shell" >"completions/probectl.$shell"
done
for page in docs/man/*.1; do
	gzip -9nc "$page" >"manpages/$(basename "$page").gz"
done
GOBIN="$(pwd)/bin" go install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@v1.10.0
