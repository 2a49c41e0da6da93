#!/bin/sh
# Checks what `goreleaser release --snapshot` left in dist/: every package, archive, cask and SBOM,
# and that each holds what the README promises (binary, man pages, completions, licences).
set -eu
cd "${DIST:-$(dirname "$0")/../dist}"
fail() { echo "check-release: $*" >&2; exit 1; }
has() { grep -qx "$2" "$1" || fail "$1 lacks $2"; }

for arch in amd64 arm64; do
	deb=$(ls probectl_*_"$arch".deb 2>/dev/null | head -n1) || true
	[ -n "$deb" ] || fail "no Debian package for $arch"
	dpkg-deb -c "$deb" | awk '{print $NF}' >"$deb.list"
	for f in ./usr/bin/probectl ./usr/share/man/man1/probectl.1.gz ./usr/share/man/man1/probectl-run-round.1.gz \
		./usr/share/bash-completion/completions/probectl ./usr/share/zsh/vendor-completions/_probectl \
		./usr/share/fish/vendor_completions.d/probectl.fish ./usr/share/doc/probectl/copyright \
		./usr/share/doc/probectl/THIRD_PARTY_NOTICES; do
		has "$deb.list" "$f"
	done
	rm "$deb.list"
done
for arch in x86_64 aarch64; do
	ls probectl-*."$arch".rpm >/dev/null 2>&1 || fail "no RPM package for $arch"
done
for target in linux_amd64 linux_arm64 darwin_amd64 darwin_arm64; do
	archive=$(ls probectl_*_"$target".tar.gz 2>/dev/null | head -n1) || true
	[ -n "$archive" ] || fail "no archive for $target"
	tar -tzf "$archive" >"$archive.list"
	for f in probectl LICENSE THIRD_PARTY_NOTICES README.md manpages/probectl.1.gz completions/probectl.bash \
		completions/probectl.zsh completions/probectl.fish docs/reference/probectl.md; do
		has "$archive.list" "$f"
	done
	rm "$archive.list"
	sbom=$(ls probectl_*_"${target%_*}"_"${target#*_}".cdx.json 2>/dev/null | head -n1) || true
	[ -n "$sbom" ] || fail "no SBOM for $target"
	grep -q '"bomFormat": *"CycloneDX"' "$sbom" || fail "$sbom is not a CycloneDX document"
done
cask=homebrew/Casks/probectl.rb
[ -f "$cask" ] || fail "no Homebrew cask"
for word in 'binary "probectl"' 'manpage "manpages/probectl.1.gz"' 'bash_completion "completions/probectl.bash"'; do
	grep -qF "$word" "$cask" || fail "$cask lacks $word"
done
[ -s checksums.txt ] || fail "no checksums"
echo "check-release: packages, archives, cask, SBOMs and checksums hold what they should"
