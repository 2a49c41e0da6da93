#!/bin/sh
# Writes a CycloneDX SBOM of cmd/probectl as built for GOOS/GOARCH (set by goreleaser) into $1,
# with the modules' licences. goreleaser runs it from dist/.
set -eu
root="$(cd "$(dirname "$0")/.." && pwd)"
exec "$root/bin/cyclonedx-gomod" app -main cmd/probectl -licenses -json -output "$1" "$root"
