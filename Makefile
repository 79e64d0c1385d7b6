# locktorture — make targets. `make demo` shows Kleppmann's pause scenario;
# `make test` runs every test against real servers (installing them first).
GO      ?= go
BIN     := bin/locktorture
STORE   ?= store

.PHONY: all deps build test vet demo bench clean

all: build

## deps: install what is missing of every server kind's Debian packages (`locktorture list
##   packages`: redis-server and redis-sentinel, valkey-server and valkey-sentinel where the
##   suite has them, etcd-server and etcd-client, zookeeper with default-jre-headless,
##   postgresql, pgbouncer, mariadb-server), chromium (browser tests) and the program rows'
##   client libraries (its "client" lines: python3-redis, -kazoo, -etcd3, -tooz, -psycopg2)
##   (scripts/deps.sh)
##   DEPS=rows: the servers and the program rows' client libraries, not chromium (what a matrix
##   or comparison run needs: the nightly jobs install it); DEPS=servers: the servers alone
##   DEPS=demo: what make demo needs (redis-server), nothing else
deps:
	@DEPS="$(DEPS)" bash scripts/deps.sh

## build: build bin/locktorture
build:
	$(GO) build -o $(BIN) ./cmd/locktorture

STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
ACTIONLINT ?= github.com/rhysd/actionlint/cmd/actionlint@v1.7.12

## vet: go vet, staticcheck, actionlint on .github/workflows, and fail when go.mod/go.sum are not tidy
vet:
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(ACTIONLINT) -color=false
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run 'go mod tidy'" >&2; $(GO) mod tidy -diff; exit 1; }
	@cd examples/locktest && { $(GO) mod tidy -diff >/dev/null || { echo "examples/locktest: go.mod/go.sum are not tidy: run 'go mod tidy' there" >&2; $(GO) mod tidy -diff; exit 1; }; }

## images: build locktorture-servers:<suite> for each of SUITES (default bookworm; e.g.
## SUITES="bullseye bookworm trixie"): every server kind's packages from that Debian suite, no
## registry (about 1.5 minutes and 0.75-1 GB each; FORCE=1 rebuilds), for --servers docker
## --image all=locktorture-servers:<suite>; BARE=1: locktorture-bare:<suite> alone, the minbase
## root as debian:<suite> has it (the nightly job's test runs the job's steps in it); WITH_BARE=1: both
SUITES ?= bookworm
.PHONY: images
images: build
	@SUITES="$(SUITES)" BARE="$(BARE)" WITH_BARE="$(WITH_BARE)" LOCKTORTURE=$(BIN) bash scripts/images.sh

## test: unit and integration tests (real servers on loopback; in containers too when Docker
##   answers): builds bin/locktorture, then runs make deps, the image build and vet side by
##   side; the tests start when deps and vet are done, and wait for the images (scripts/test.sh)
test:
	@GO="$(GO)" MAKE="$(MAKE)" bash scripts/test.sh

## findings: run every finding (locktorture list findings; docs/findings.md) over FINDINGS_SEEDS
##   seeds (default 3), say how often each reproduced, and fail when one did not reproduce on
##   every seed (the library changed: the finding is stale). Not part of `make test`.
FINDINGS_SEEDS ?= 3
FINDINGS_STORE ?= $(STORE)/findings
.PHONY: findings
findings: build
	@mkdir -p $(FINDINGS_STORE); fail=0; for id in $$($(BIN) list findings | awk '{print $$1}'); do \
	  n=0; for seed in $$(seq 1 $(FINDINGS_SEEDS)); do \
	    $(BIN) repro $$id --seed $$seed --store $(FINDINGS_STORE) --quiet > $(FINDINGS_STORE)/$$id.$$seed.log 2>&1; rc=$$?; \
	    if [ $$rc = 1 ]; then n=$$((n+1)); else echo "$$id seed $$seed: exit $$rc (see $(FINDINGS_STORE)/$$id.$$seed.log)"; fi; \
	  done; \
	  echo "$$id: reproduced $$n of $(FINDINGS_SEEDS)"; [ $$n = $(FINDINGS_SEEDS) ] || fail=1; \
	done; exit $$fail

## bisect: bisect every finding on a Go library (locktorture bisect ID: the first version of the
##   library where it reproduces, BISECT_SEEDS runs a version, default 2; docs/bisect.md); the
##   findings on a Debian package are said and skipped. Needs the Go module proxy. Not part of
##   `make test`. BISECT_FLAGS adds flags (--versions FROM..TO).
BISECT_SEEDS ?= 2
BISECT_FLAGS ?=
.PHONY: bisect
bisect: build
	@fail=0; for id in $$($(BIN) list findings | awk '{print $$1}'); do \
	  $(BIN) bisect $$id --seeds $(BISECT_SEEDS) --store $(STORE) $(BISECT_FLAGS); rc=$$?; \
	  case $$rc in 0) ;; 254) echo "$$id: skipped (not a Go library)";; *) echo "$$id: bisect exit $$rc"; fail=1;; esac; \
	done; exit $$fail

## demo: run Kleppmann's pause scenario against real Redis and show where the report is
## (in containers: make demo DEMO_FLAGS="--servers docker --image all=locktorture-servers:bookworm").
## It installs only what the demo needs, when missing (redis-server: DEPS=demo, not the whole
## make deps), while bin/locktorture builds. The first build compiles about 700 packages (about
## 170 s of CPU: make demo took 91-93 s on a fresh 2-core machine, 2026-11-29; then cached):
## it says so first. DEMO_BUILDFLAGS
## (default -ldflags='-s -w': no DWARF or symbol table in the binary, so the link does less;
## panics and stack traces keep their functions and file:line; the packages' compiled code is
## the same as make build's, so it shares their cache)
DEMO_FLAGS ?=
DEMO_BUILDFLAGS ?= -ldflags='-s -w'
demo:
	@echo "== building $(BIN) (the first time: about 700 packages, about 1.5 minutes on 2 idle cores; then cached) and installing redis-server if missing"
	@DEPS=demo bash scripts/deps.sh & deps=$$!; \
	$(GO) build $(DEMO_BUILDFLAGS) -o $(BIN) ./cmd/locktorture; built=$$?; \
	wait $$deps || exit 1; test $$built -eq 0
	@echo "== locktorture run --scenario kleppmann-pause"
	@$(BIN) run --scenario kleppmann-pause --store $(STORE) --quiet $(DEMO_FLAGS); \
	code=$$?; \
	echo; \
	echo "locktorture run exited $$code (1 = invalid: the lock was caught, as this scenario expects)"; \
	echo "open the report: $(STORE)/latest/index.html"; \
	test $$code -eq 1

## bench: on a generated 1,000,000-op history: checkers (ops/s), parsing and
## encoding (MB/s), analyze end to end (ops/s, MB/s); and the harness's cost
## beside a bare lock loop (BenchmarkHarness, needs redis-server; read its
## round-ratio) and its own CPU per hold (BenchmarkHarnessOwnCost): docs/bench.md
bench:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./checker/
	$(GO) test -run '^$$' -bench . -benchtime 1x ./history/
	$(GO) test -run '^$$' -bench Analyze -benchtime 1x ./runner/
	$(GO) test -run '^$$' -bench Harness -benchtime 1x ./workload/

clean:
	rm -rf bin $(STORE)

.PHONY: matrix
MATRIX_FLAGS ?=

## matrix: every built-in scenario with every backend it applies to, judged against its expectation,
## two cells at a time (about 4.5 minutes on 2 cores; MATRIX_FLAGS="--parallel 1": one by one, about 9);
## the report lands in $(STORE)/matrix/latest/ (e.g. make matrix MATRIX_FLAGS="--shard 1/2")
matrix: deps build
	./$(BIN) matrix --store $(STORE) $(MATRIX_FLAGS)

.PHONY: compare
COMPARE_FLAGS ?=

## compare: every fault family on every row, 3 seeds, fenced too where grants carry tokens
## (locktorture compare), two to four cells per core at a time as their CPU allows (--parallel
## auto; COMPARE_FLAGS after it wins, e.g. --parallel 2); the table lands in
## $(STORE)/matrix/latest/compare.html (compare.png, compare.txt). About 9 minutes on 2 cores
compare: deps build
	./$(BIN) compare --store $(STORE) --parallel auto $(COMPARE_FLAGS)

.PHONY: soak
SOAK_DURATION ?= 10m

## soak: a full-speed baseline (redis-token, 8 clients, 8 keys, hold 1µs, think 1-2µs; valid, or
## it fails) and the chaos mix, SOAK_DURATION each (default 10m), with the harness's RSS sampled
## every 5s and its peak printed (not part of make test)
soak: deps build
	@bash scripts/soak.sh ./$(BIN) $(STORE) $(SOAK_DURATION)

.PHONY: versions
VERSIONS_FILE ?= versions.debian.yaml
VERSIONS_SCENARIOS ?= baseline,kleppmann-pause,pg-terminate,etcd-pause,zk-pause,failover

## versions: the version axis (docs/versions.md): builds locktorture-servers:bullseye, :bookworm and
## :trixie when missing (root), then runs VERSIONS_SCENARIOS in containers once per set of
## VERSIONS_FILE (the three suites and Valkey), side by side in $(STORE)/matrix/latest/ (about 20
## minutes on 2 cores; not part of make test)
versions: build
	@SUITES="bullseye bookworm trixie" LOCKTORTURE=$(BIN) bash scripts/images.sh
	./$(BIN) matrix --store $(STORE) --servers docker --versions $(VERSIONS_FILE) --scenarios $(VERSIONS_SCENARIOS) $(MATRIX_FLAGS)

.PHONY: compose-matrix
COMPOSE_IMAGE ?= locktorture-servers:bookworm

## compose-matrix: write the standing cluster's files for COMPOSE_IMAGE (locktorture compose), bring
## it up, run baseline, kleppmann-pause, redlock-clock-jump and failover against it (--servers external),
## take it down
compose-matrix: build
	@./$(BIN) compose --dir $(STORE)/compose --image all=$(COMPOSE_IMAGE) >/dev/null || exit 1; \
	cd $(STORE)/compose || exit 1; \
	docker-compose down -v >/dev/null 2>&1; \
	docker-compose up -d || exit 1; \
	$(CURDIR)/$(BIN) matrix --store $(abspath $(STORE)) --scenarios baseline,kleppmann-pause,redlock-clock-jump,failover \
	  --servers external --servers-file compose.servers.yaml $(MATRIX_FLAGS); code=$$?; \
	docker-compose down -v; exit $$code
