# wharf — build, test and chores. `make help` lists the targets.
#
# Everything runs with the Go on PATH and the module proxy configured on the
# machine; nothing here names a package registry. CI calls `make test`
# through .ci/run.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

GO ?= go
# Never download a toolchain behind our back, and never let a build rewrite
# go.mod/go.sum: CI must build exactly what is committed.
export GOTOOLCHAIN ?= local
export GOFLAGS ?= -mod=readonly

BIN_DIR := $(CURDIR)/bin
CACHE_BIN := $(CURDIR)/.cache/bin
# The programs the tests run beside wharf, each built from its own main
# package at the version tools/go.mod pins: the CNCF registry (the suites and
# the demo run against it), cosign (it signs the trust fixtures; v3.1.3 is the
# newest that builds with Go 1.26), crane (it reads the data-root as an OCI
# layout: integration-cli/oci_readers_test.go) and oras (it reads the
# archives `wharf sync SOURCE oci-archive:FILE` writes). One go build makes
# all four, so the dependencies they share (about 350 packages: the cloud
# SDKs, OpenTelemetry, go-containerregistry) are compiled once, not once per
# program.
TOOLS_DIR := $(CURDIR)/tools
REGISTRY_BIN := $(CACHE_BIN)/registry
COSIGN_BIN := $(CACHE_BIN)/cosign
CRANE_BIN := $(CACHE_BIN)/crane
ORAS_BIN := $(CACHE_BIN)/oras
TEST_TOOLS := $(REGISTRY_BIN) $(COSIGN_BIN) $(CRANE_BIN) $(ORAS_BIN)
TEST_TOOL_PKGS := github.com/distribution/distribution/v3/cmd/registry github.com/sigstore/cosign/v3/cmd/cosign \
	github.com/google/go-containerregistry/cmd/crane oras.land/oras/cmd/oras
# regclient's regsync and regctl, the bench's baselines for `wharf sync`
# (case 13) and `wharf cat` (case 14: image get-file); same module.
REGSYNC_BIN := $(CACHE_BIN)/regsync
REGCTL_BIN := $(CACHE_BIN)/regctl
BENCH_TOOLS := $(REGSYNC_BIN) $(REGCTL_BIN)
# syft: the packages suite's oracle and bench case 15's baseline of `wharf
# packages`, built from tools/syft, a module of its own (its dependencies
# would move the registry's and cosign's).
SYFT_DIR := $(TOOLS_DIR)/syft
SYFT_BIN := $(CACHE_BIN)/syft
BENCH_TOOL_PKGS := github.com/regclient/regclient/cmd/regsync github.com/regclient/regclient/cmd/regctl

# Version stamp: cmd/wharfd and cmd/wharf declare main.version (wharfd also
# main.gitCommit and main.buildTime; the linker ignores -X for a variable a
# package lacks). buildTime is the commit time, not the wall clock, so that two
# builds of one commit are identical.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
GIT_COMMIT ?= $(shell git rev-parse --short HEAD 2>/dev/null)
BUILD_TIME ?= $(shell git log -1 --format=%cI 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.gitCommit=$(GIT_COMMIT) -X main.buildTime=$(BUILD_TIME)

# Unit packages: everything but the end-to-end suites (they need the real
# binaries and run without -race, under their own timeout).
UNIT_PKGS = $(shell $(GO) list ./... | grep -v /integration-cli)
# Codecs with no goroutine, lock or atomic of their own (the layer index, its
# gzip checkpoints and TOC readers: pure functions over byte streams) run
# without -race, which costs them 3-5x and finds nothing there: about 30 s of
# `make test`. SEQUENTIAL_CHECK fails the run if one of them gains any.
SEQUENTIAL_PKGS = $(shell $(GO) list ./internal/gzindex/... ./internal/layerindex/... ./internal/layertoc/...)
RACE_PKGS = $(filter-out $(SEQUENTIAL_PKGS),$(UNIT_PKGS))
SEQUENTIAL_DIRS = internal/gzindex internal/layerindex internal/layertoc
SEQUENTIAL_CHECK = out="$$(grep -rlE 'go func|\bgo [a-zA-Z_.]+\(|sync\.|atomic\.' --include='*.go' --exclude='*_test.go' $(SEQUENTIAL_DIRS) \
		| grep -v '^internal/gzindex/flate/huffman.go$$' || true)"; \
	if [ -n "$$out" ]; then echo "concurrency in a package run without -race (move it to RACE_PKGS):"; echo "$$out"; exit 1; fi

FUZZTIME ?= 10s
INTEGRATION_TIMEOUT ?= 8m

.PHONY: help build registry cosign crane oras regsync regctl syft test unit integration lint man completion demo bench fuzz clean distclean \
	install uninstall deb nfpm

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# Static binaries (CGO_ENABLED=0, as the docker CLI ships): no dynamic
# loader and libc at each start, about 2 ms of every CLI command here (the
# Go resolver and os/user need no cgo), and a .deb that runs on any glibc.
build: ## build bin/wharfd and bin/wharf
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN_DIR)/wharfd ./cmd/wharfd
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN_DIR)/wharf ./cmd/wharf

registry: $(REGISTRY_BIN) ## build the CNCF registry (with cosign, crane and oras) into .cache/bin (once)
cosign: $(COSIGN_BIN) ## build cosign (with the registry, crane and oras) into .cache/bin (once)
crane: $(CRANE_BIN) ## build crane (with the registry, cosign and oras) into .cache/bin (once)
oras: $(ORAS_BIN) ## build oras (with the registry, cosign and crane) into .cache/bin (once)
regsync: $(REGSYNC_BIN) ## build regclient's regsync and regctl into .cache/bin (once)
regctl: $(REGCTL_BIN) ## build regclient's regctl and regsync into .cache/bin (once)
syft: $(SYFT_BIN) ## build syft, the packages suite's oracle, into .cache/bin (once)

# Built in tools/, their own module: our go.mod and GOFLAGS do not apply,
# tools/go.sum checks every download. Grouped targets (&:): one go build
# makes every missing program of its group.
$(TEST_TOOLS) &:
	mkdir -p $(CACHE_BIN) && cd $(TOOLS_DIR) && GOFLAGS=-mod=readonly $(GO) build -trimpath -o $(CACHE_BIN)/ $(TEST_TOOL_PKGS)

$(BENCH_TOOLS) &:
	mkdir -p $(CACHE_BIN) && cd $(TOOLS_DIR) && GOFLAGS=-mod=readonly $(GO) build -trimpath -o $(CACHE_BIN)/ $(BENCH_TOOL_PKGS)

$(SYFT_BIN):
	mkdir -p $(CACHE_BIN) && cd $(SYFT_DIR) && GOFLAGS=-mod=readonly $(GO) build -trimpath -o $(SYFT_BIN) github.com/anchore/syft/cmd/syft

# The commands are variables so that `test` runs each step once, in order,
# while `unit`, `integration` and `lint` stay available on their own.
VET = $(GO) vet -tags gendocs ./...
FMT_CHECK = out="$$(find . -name '*.go' -not -path './.git/*' -not -path './.cache/*' \
		-not -path './bin/*' -not -path '*/testdata/*' -print0 | xargs -0 gofmt -l)"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
DEPCHECK = $(CURDIR)/scripts/depcheck.sh
# The unit tests and the suites get a TMPDIR of their own on a memory
# filesystem when one has room (scripts/fast-tmpdir.sh says why and how
# much), removed when they end.
WITH_FAST_TMP = tmp="$$($(CURDIR)/scripts/fast-tmpdir.sh)"; if [ -n "$$tmp" ]; then trap 'rm -rf "$$tmp"' EXIT; export TMPDIR="$$tmp"; fi;
# One exhaustive comparison runs without -race as well: api/server's
# TestFastRouteAgreesWithMux sends 46,000 requests through two routers, each
# pair of its own, sharing only a mutex-held tally; the detector tripled its
# 8 s and finds nothing the package's concurrent tests do not.
UNRACED_PKG = ./api/server/
UNRACED_TESTS = ^TestFastRouteAgreesWithMux$$
# -p 4: a race-detector binary sleeps 1 s when it exits (GORACE's
# atexit_sleep_ms, kept so late races still report); with 52 packages
# that was 26 s of 2 idle cores at -p 2 (87 s), at -p 4 61 s.
UNIT = $(SEQUENTIAL_CHECK); $(WITH_FAST_TMP) $(GO) test -tags gendocs -p 4 -race -count=1 -skip '$(UNRACED_TESTS)' $(RACE_PKGS) \
	&& $(GO) test -tags gendocs -count=1 $(SEQUENTIAL_PKGS) && $(GO) test -tags gendocs -count=1 -run '$(UNRACED_TESTS)' $(UNRACED_PKG)
# -v so that each suite's "SUITE: OK: N passed" summary reaches the log
# (each suite is a go test of its own; it prints nothing else when it
# passes). The suites mostly wait on wharfd, registries and the disk, so
# 4 of them run at once on 2 cores: 170 s against 397 s one at a time; 6
# gained nothing (174 s). No suite waits on timers for more than about
# 40 s (HostileTrickleSuite, HostileNetworkSuite, CheckRemoteWatchSuite):
# what bounds the phase is the CPU, about 300 s of it in all (wharfd, the
# registries, cosign, the tests), so about 150 s on 2 cores. Those that
# must run alone say why beside their func Test. Under `make test` the
# unit tests run beside them, and a fifth suite fills the time the
# timer-bound ones (started last) leave idle.
INTEGRATION_PARALLEL ?= 5
INTEGRATION = $(WITH_FAST_TMP) WHARF_BIN_DIR=$(BIN_DIR) WHARF_REGISTRY_BIN=$(REGISTRY_BIN) PATH="$(CACHE_BIN):$$PATH" \
	$(GO) test -v -count=1 -parallel $(INTEGRATION_PARALLEL) -timeout $(INTEGRATION_TIMEOUT) ./integration-cli/...

# `test` runs the unit tests beside the suites: each phase leaves a core
# idle part of the time (the race binaries' exit sleep, the suites'
# timers), and together they keep both busy. The unit tests' output is
# printed after the suites'; the step fails if either failed.
UNIT_BESIDE_INTEGRATION = log="$$(mktemp)"; ( $(UNIT) ) >"$$log" 2>&1 & unit=$$!; \
	it=0; ( $(INTEGRATION) ) || it=$$?; u=0; wait $$unit || u=$$?; \
	echo "---- unit tests (exit $$u)"; cat "$$log"; rm -f "$$log"; \
	echo "---- unit tests exit $$u, integration suites exit $$it"; [ $$u -eq 0 ] && [ $$it -eq 0 ]
test: build registry cosign crane oras syft ## vet, gofmt, depcheck, unit tests (-race) beside the integration suites
	$(VET)
	@echo "gofmt -l"; $(FMT_CHECK)
	$(DEPCHECK)
	$(UNIT_BESIDE_INTEGRATION)

unit: ## unit tests with the race detector
	$(UNIT)

integration: build registry cosign crane oras syft ## end-to-end suites against bin/, the real registry, cosign, crane and oras
	$(INTEGRATION)

lint: ## go vet, gofmt -l must be empty, imports point down (depcheck)
	$(VET)
	@echo "gofmt -l"; $(FMT_CHECK)
	$(DEPCHECK)

# man/*.N.md (go-md2man markdown, written by hand from `go run -tags gendocs ./cmd/wharf gen-man
# --markdown`) are the sources; the roff pages go into man/manN/ so that
# `MANPATH=man man wharf-inspect` works from the checkout. go-md2man is the
# version go.mod pins (cobra/doc uses it), built once into .cache/bin.
MD2MAN := $(CACHE_BIN)/go-md2man

$(MD2MAN):
	$(GO) build -o $@ github.com/cpuguy83/go-md2man/v2

man: $(MD2MAN) ## roff pages into man/man1, man/man8 from man/*.md
	@shopt -s nullglob; for md in man/*.[1-9].md; do \
		page=$$(basename "$$md" .md); sec=$${page##*.}; \
		mkdir -p "man/man$$sec"; \
		echo "go-md2man $$md -> man/man$$sec/$$page"; \
		$(MD2MAN) -in "$$md" -out "man/man$$sec/$$page"; \
	done

completion: build ## bash, zsh and fish completions into contrib/completion/
	mkdir -p contrib/completion
	$(BIN_DIR)/wharf gen-completion $(CURDIR)/contrib/completion

# Install layout. PREFIX is where wharf runs from (the service unit's
# ExecStart names $(BINDIR)/wharfd); DESTDIR stages the tree elsewhere, as
# `make deb` does. systemd reads units from /lib/systemd/system (what
# Debian 12's systemd.pc says for PREFIX=/usr) and from
# /usr/local/lib/systemd/system.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
SYSTEMDUNITDIR ?= $(if $(filter /usr,$(PREFIX)),/lib/systemd/system,$(PREFIX)/lib/systemd/system)
# The example daemon.json is documentation, not configuration: under /etc
# it would be a conffile that `dpkg -r` leaves behind, and wharfd would
# never read it there anyway.
DOCDIR ?= $(PREFIX)/share/doc/wharf
INSTALL ?= install

# man/NAME.N.md -> $(MANDIR)/manN/NAME.N
MAN_PAGES := $(basename $(notdir $(wildcard man/*.[1-9].md)))
MAN_FILES = $(foreach p,$(MAN_PAGES),$(MANDIR)/man$(subst .,,$(suffix $(p)))/$(p))
# Every file `install` writes, relative to DESTDIR: `uninstall` removes
# exactly these.
INSTALLED_FILES = $(BINDIR)/wharfd $(BINDIR)/wharf $(MAN_FILES) \
	$(BASHCOMPDIR)/wharf $(ZSHCOMPDIR)/_wharf $(FISHCOMPDIR)/wharf.fish \
	$(SYSTEMDUNITDIR)/wharf.service $(SYSTEMDUNITDIR)/wharf.socket \
	$(DOCDIR)/daemon.json.example

install: build man ## install binaries, man pages, completions, systemd units, example daemon.json (PREFIX=/usr/local, DESTDIR)
	$(INSTALL) -d $(DESTDIR)$(BINDIR)
	$(INSTALL) -m 0755 $(BIN_DIR)/wharfd $(BIN_DIR)/wharf $(DESTDIR)$(BINDIR)/
	@for p in $(MAN_PAGES); do sec=$${p##*.}; \
		echo "$(INSTALL) -m 0644 man/man$$sec/$$p $(DESTDIR)$(MANDIR)/man$$sec/"; \
		$(INSTALL) -d $(DESTDIR)$(MANDIR)/man$$sec; \
		$(INSTALL) -m 0644 man/man$$sec/$$p $(DESTDIR)$(MANDIR)/man$$sec/; \
	done
	$(INSTALL) -d $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR)
	$(INSTALL) -m 0644 contrib/completion/bash/wharf $(DESTDIR)$(BASHCOMPDIR)/wharf
	$(INSTALL) -m 0644 contrib/completion/zsh/_wharf $(DESTDIR)$(ZSHCOMPDIR)/_wharf
	$(INSTALL) -m 0644 contrib/completion/fish/wharf.fish $(DESTDIR)$(FISHCOMPDIR)/wharf.fish
# contrib/systemd/wharf.service is the template: it names /usr/local/bin
# (what docs/deploy.md copies by hand), rewritten here for BINDIR.
	$(INSTALL) -d $(DESTDIR)$(SYSTEMDUNITDIR)
	sed 's|^ExecStart=/usr/local/bin/wharfd |ExecStart=$(BINDIR)/wharfd |' contrib/systemd/wharf.service \
		> $(DESTDIR)$(SYSTEMDUNITDIR)/wharf.service
	grep -q '^ExecStart=$(BINDIR)/wharfd ' $(DESTDIR)$(SYSTEMDUNITDIR)/wharf.service
	chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/wharf.service
	$(INSTALL) -m 0644 contrib/systemd/wharf.socket $(DESTDIR)$(SYSTEMDUNITDIR)/wharf.socket
	$(INSTALL) -d $(DESTDIR)$(DOCDIR)
	$(INSTALL) -m 0644 contrib/daemon.json.example $(DESTDIR)$(DOCDIR)/daemon.json.example

uninstall: ## remove what `make install` wrote (same PREFIX, DESTDIR)
	rm -f $(addprefix $(DESTDIR),$(INSTALLED_FILES))
	rmdir $(DESTDIR)$(DOCDIR) 2>/dev/null || true

# make deb: nfpm (a maintained packager, from the module proxy; v2.48.0
# builds with Go 1.26) packs `make install DESTDIR=bin/deb-root PREFIX=/usr`
# into bin/wharf_DEBVERSION_ARCH.deb; contrib/packaging/ has its config and
# maintainer scripts. The binaries carry VERSION, the package DEB_VERSION,
# which is VERSION made a Debian version.
NFPM_BIN := $(CACHE_BIN)/nfpm
NFPM_PKG := github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.48.0
DEB_ROOT := $(BIN_DIR)/deb-root
DEB_VERSION ?= $(shell $(CURDIR)/contrib/packaging/deb-version.sh '$(VERSION)' '$(BUILD_TIME)')
DEB_ARCH ?= $(shell $(GO) env GOARCH)

nfpm: $(NFPM_BIN) ## build nfpm into .cache/bin (once)

$(NFPM_BIN):
	GOFLAGS= GOBIN=$(CACHE_BIN) $(GO) install $(NFPM_PKG)

deb: $(NFPM_BIN) ## Debian package bin/wharf_VERSION_ARCH.deb (nfpm; PREFIX=/usr)
	rm -rf $(DEB_ROOT) $(BIN_DIR)/wharf_*.deb
	$(MAKE) --no-print-directory install DESTDIR=$(DEB_ROOT) PREFIX=/usr VERSION='$(VERSION)'
# Debian policy: man pages compressed with gzip -9n.
	find $(DEB_ROOT)/usr/share/man -type f -exec gzip -9n {} +
	WHARF_DEB_VERSION='$(DEB_VERSION)' WHARF_DEB_ARCH=$(DEB_ARCH) \
		$(NFPM_BIN) package --config contrib/packaging/nfpm.yaml --packager deb --target $(BIN_DIR)/
	@ls $(BIN_DIR)/wharf_*.deb

demo: cosign ## the whole story against a real registry, signatures included (scripts/demo.sh)
	$(CURDIR)/scripts/demo.sh

# The suite (bench/, build tag `bench`) starts the registry and wharfd
# itself; without it, whatever `func Benchmark…` the packages have.
bench: build registry regsync regctl crane syft ## the benchmark suite (bench/), else go test -bench
	@if [ -f bench/main.go ]; then \
		WHARFD=$(BIN_DIR)/wharfd $(GO) run -tags bench ./bench; \
	elif grep -rqs --include='*_test.go' -E '^func Benchmark' .; then \
		$(GO) test -run='^$$' -bench=. -benchmem $(UNIT_PKGS); \
	else \
		echo "bench: no benchmarks (see bench/README.md)"; \
	fi

fuzz: ## run every Fuzz* target for FUZZTIME (default 10s) each
	FUZZTIME=$(FUZZTIME) $(CURDIR)/scripts/fuzz.sh

clean: ## remove build outputs and generated roff (keeps .cache)
	rm -rf $(BIN_DIR) man/man[1-9]

distclean: clean ## also remove .cache (the registry is rebuilt next time)
	rm -rf $(CURDIR)/.cache
