# The README's commands are these targets; CI (.ci/run) runs `make test`, the README's test command.
GO ?= go
PKGS := ./...

.PHONY: test lint bench generate build fuzz release-check

## test: lint, then every test with the race detector against a real PostgreSQL (the README's test command)
test: lint
	@if [ "$${PROBECTL_REQUIRE_BROWSER:-}" != 1 ] && [ -z "$${PROBECTL_CHROMIUM:-}" ] && \
	   ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then \
	  echo "make test: no chromium: the status page's browser tests are SKIPPED (install chromium; PROBECTL_REQUIRE_BROWSER=1 makes them failures, as in .ci/run)" >&2; fi
	@# internal/alerts/alertmanager_test.go looks these two names up on PATH (alertmanagerBinary)
	@if [ "$${PROBECTL_REQUIRE_ALERTMANAGER:-}" != 1 ] && \
	   ! command -v prometheus-alertmanager >/dev/null 2>&1 && ! command -v alertmanager >/dev/null 2>&1; then \
	  echo "make test: no Alertmanager: the real-Alertmanager test is SKIPPED (install prometheus-alertmanager; PROBECTL_REQUIRE_ALERTMANAGER=1 makes it a failure, as in .ci/run)" >&2; fi
	@# The probe internal/fakefleet's namespace tests run (netns.go, unshareCommands): can a network namespace be made here?
	@if [ "$${PROBECTL_REQUIRE_NETNS:-}" != 1 ] && \
	   ! { [ "$$(id -u)" = 0 ] && unshare --net ip link set lo up >/dev/null 2>&1; } && \
	   ! unshare --user --map-root-user --net ip link set lo up >/dev/null 2>&1; then \
	  echo "make test: WARNING: no network namespace can be made here (\`unshare --user --map-root-user --net ip link set lo up\` fails: it takes util-linux, iproute2, and CAP_SYS_ADMIN or unprivileged user namespaces): the SSRF tests that run in a network namespace are SKIPPED (go test -v names each; make test prints only ok for their packages; PROBECTL_REQUIRE_NETNS=1 makes them failures, as in .ci/run)" >&2; fi
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

## lint: what CI refuses: unformatted code, an untidy go.mod, vet findings, and functions the binary
## carries that nothing in it calls (deadcode, pinned; about 25 s of CPU): code only tests use lives in
## test helpers (internal/testfactory, internal/dbtest, _test.go files). The goreleaser config is
## checked by release-check, which CI runs: compiling goreleaser took 14 of the 20 minutes of a first
## 'make test' on a fresh 2-core machine.
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) vet $(PKGS)
	@echo "deadcode ./cmd/probectl"; out=$$($(GO) run golang.org/x/tools/cmd/deadcode@v0.45.0 ./cmd/probectl) || exit 1; \
	if [ -n "$$out" ]; then echo "the binary carries functions nothing in it calls: delete them, or move what only tests use into a test helper:"; \
	echo "$$out"; exit 1; fi

## bench: the benchmarks that print figures (sizes via PROBECTL_BENCH_* variables, see docs/)
bench:
	$(GO) test -run='^$$' -bench=. -benchtime=1x -timeout 60m $(PKGS)

## fuzz: a short run of every fuzz target (go test fuzzes one target in one package at a time)
fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=30s ./internal/directory
	$(GO) test -run='^$$' -fuzz='^FuzzParseRegistry$$' -fuzztime=30s ./internal/directory
	$(GO) test -run='^$$' -fuzz='^FuzzRegistrySyncPage$$' -fuzztime=30s ./internal/directory
	$(GO) test -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=30s ./internal/when
	$(GO) test -run='^$$' -fuzz='^FuzzVerify$$' -fuzztime=30s ./probe/attest

## generate: the man pages and the Markdown command reference under docs/, from the command tree,
## and THIRD_PARTY_NOTICES from the modules linked in (TestDocsAreCurrent and TestNoticesAreCurrent
## fail while they are stale); SQL is hand-written in queries/*.sql
generate:
	$(GO) generate $(PKGS)
	$(GO) run ./cmd/probectl docs --dir docs
	$(GO) test -count=1 -run '^TestNoticesAreCurrent$$' ./internal/notices -update

## build: a binary stamped like a release build
build:
	$(GO) build -o probectl -ldflags "-X main.version=$$(git describe --tags --always --dirty 2>/dev/null || echo dev) -X main.commit=$$(git rev-parse --short HEAD) -X main.date=$$(date -u +%Y-%m-%dT%H:%M:%SZ)" ./cmd/probectl


## release-check: the goreleaser config (goreleaser check), then the whole release, as a snapshot
## (nothing published): archives, deb and rpm packages, the Homebrew cask, SBOMs; then checks that
## each holds what the README promises. CI runs it (2.5 min warm when the machine is idle; 6 to 10 min
## cold, most of it compiling goreleaser, or on a busy 2-core machine).
release-check:
	$(GO) run github.com/goreleaser/goreleaser/v2@v2.15.1 check
	$(GO) run github.com/goreleaser/goreleaser/v2@v2.15.1 release --snapshot --clean --skip=publish
	sh scripts/check-release.sh
