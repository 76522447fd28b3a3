# fsmgen: make generate regenerates every generated file, make test runs
# every test (against a real PostgreSQL, see runtime/pgtest).

GO ?= go
FUZZTIME ?= 2m

# The directories whose Node tests make test runs, npm ci'd first.
NPM_DIRS = editors/interop editors/vscode

.PHONY: all generate sqlc npm-ci vsix test check-generated bench bench-rounds lint lint-generated docs fuzz demo demo-temporal demo-nats temporal-cli

all: generate test

# The directories of the main module with //go:generate lines. go generate
# is given these rather than ./..., whose package list is made before the
# first generator runs: fsmgen removes the package of a renamed machine, and
# go generate would then fail on the files it listed there.
GENERATE_DIRS = $(shell grep -rl --include='*.go' --exclude-dir=.git --exclude-dir=testdata --exclude-dir=bench --exclude-dir=tools '^//go:generate' . | xargs -n1 dirname | sort -u)

# Regenerate the machines of machines/, of the engines in runtime/ and of
# bench/ (Go code, tests, diagrams, pages, SQL guards) and the sqlc queries
# of db/.
generate: sqlc
	$(GO) generate $(GENERATE_DIRS)
	cd bench && $(GO) generate ./...

# sqlc is a tool of tools/go.mod, a module of its own so that its
# dependencies stay out of the main module (see tools.go). fsmgen is a tool
# of the main module's go.mod: the //go:generate lines run go tool fsmgen.
sqlc:
	cd tools && GOWORK=off $(GO) tool sqlc generate -f ../db/sqlc.yaml

# Run the demo (machines/cmd/demo): RetrieveOrGenerate, the linear chain,
# then the step engine's report workflow against a scripted HTTP API, on one
# database: the PostgreSQL server DATABASE_URL names,
# or on a throwaway local cluster when it is unset.
demo:
	$(GO) run ./machines/cmd/demo

# The Temporal CLI, whose dev server (temporal server start-dev --headless)
# contrib/temporal's integration test and demo start. When neither
# TEMPORAL_CLI, PATH nor $(go env GOPATH)/bin has it, it is built from the
# Go module proxy, once (several minutes).
TEMPORAL_CLI_VERSION = v1.5.1
GOBIN_PATH = $(shell $(GO) env GOPATH)/bin
temporal-cli:
	@if [ -z "$$TEMPORAL_CLI" ] && ! command -v temporal >/dev/null 2>&1 && [ ! -x "$(GOBIN_PATH)/temporal" ]; then \
		echo "building the Temporal CLI $(TEMPORAL_CLI_VERSION) (go install, once)"; \
		$(GO) install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI_VERSION); fi

# The outbox relayed to NATS JetStream, on a nats-server it starts (and on
# DATABASE_URL's database, or a throwaway cluster).
demo-nats:
	cd contrib/nats && $(GO) run ./cmd/outboxdemo

# The FCHA demo on Temporal, on a dev server it starts.
demo-temporal: temporal-cli
	cd contrib/temporal && PATH="$$PATH:$(GOBIN_PATH)" $(GO) run ./cmd/fchademo

# npm ci in each of NPM_DIRS, unless its node_modules is newer than its
# package-lock.json (npm ci writes node_modules/.package-lock.json).
npm-ci:
	@for d in $(NPM_DIRS); do \
		if [ ! "$$d/node_modules/.package-lock.json" -nt "$$d/package-lock.json" ]; then \
			echo "npm ci ($$d)"; (cd $$d && npm ci --no-audit --no-fund) || exit 1; fi; done

# The VS Code extension, packaged by vsce: editors/vscode/fsmgen-VERSION.vsix
# (go test ./cmd/fsmgen -run TestVSIX packages it too, and checks it).
vsix:
	cd editors/vscode && npm ci --no-audit --no-fund && node node_modules/@vscode/vsce/vsce package

test: temporal-cli npm-ci
	$(GO) vet ./...
	$(GO) test ./...
	cd bench && $(GO) vet ./... && $(GO) test ./...
	cd contrib/temporal && $(GO) vet ./... && PATH="$$PATH:$(GOBIN_PATH)" $(GO) test ./...
	cd contrib/otel && $(GO) vet ./... && $(GO) test ./...
	cd contrib/nats && $(GO) vet ./... && $(GO) test ./...
	cd contrib/console-e2e && $(GO) vet ./... && $(GO) test ./...

# Regenerate everything in a copy of the tree and fail if any committed
# generated file differs from what the generators write now. go.work.sum,
# which the go command writes as it needs in the workspace (go.work), is
# not tracked.
check-generated:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	tar --exclude=.git --exclude=node_modules --exclude=go.work.sum -cf - . | tar -xf - -C "$$tmp" && \
	$(MAKE) -s -C "$$tmp" generate >/dev/null && \
	if diff -r -x .git -x node_modules -x go.work.sum . "$$tmp" >"$$tmp.diff"; then rm -f "$$tmp.diff"; echo "generated files are up to date"; \
	else cat "$$tmp.diff"; rm -f "$$tmp.diff"; echo "generated files are stale: run make generate and commit the result" >&2; exit 1; fi

# Run every benchmark of bench/, one package at a time, on a durable
# PostgreSQL: the server FSMGEN_BENCH_DATABASE_URL names, or else a
# throwaway cluster started with fsync, synchronous_commit and
# full_page_writes on (see bench/internal/benchdb); a server that is not
# durable is refused. BENCHFLAGS adds go test flags, for example
# make bench BENCHFLAGS='-count 6 -benchtime 300x'.
# bench/fcha also starts a Temporal dev server (temporal-cli).
BENCHFLAGS ?=
bench: temporal-cli
	cd bench && PATH="$$PATH:$(GOBIN_PATH)" $(GO) test -p 1 -run '^$$' -bench . -benchmem $(BENCHFLAGS) ./...

# Paired, alternating rounds of two revisions (BASE and NEW: git revisions,
# or . for the working tree) on the same durable cluster kind as make bench:
# Record and the engine beside the floor INSERT (through pgx and pgbench)
# and River, measured in the same rounds; then benchstat and the in-round
# ratios (see bench/rounds.sh for ROUNDS, BENCHES, HARNESS and OUT).
BASE ?= main
NEW ?= .
bench-rounds:
	bench/rounds.sh $(BASE) $(NEW)

# Every module of the repository (the main one, bench, tools, ...) must be
# tidy: go.mod lists what the code imports, direct requirements as direct.
MODULES = $(shell find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' -exec dirname {} \; | sort)

# staticcheck runs with every check (-checks all, style checks included) on
# the hand-written code of every module but tools, which holds no package;
# lint-generated holds generated code to the same rules.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint: lint-generated
	@for m in $(MODULES); do echo "go mod tidy -diff ($$m)"; (cd $$m && $(GO) mod tidy -diff) || exit 1; done
	$(GO) vet ./...
	@out=$$(gofmt -l . ) && if [ -n "$$out" ]; then echo "gofmt -l:"; echo "$$out"; exit 1; fi
	$(GO) tool fsmgen fmt -l machines runtime bench | (! grep .)
	@for m in $(filter-out ./tools,$(MODULES)); do echo "staticcheck -checks all ($$m)"; (cd $$m && $(GO) run $(STATICCHECK) -checks all ./...) || exit 1; done

# Generated code is held to the rules of hand-written code: in a copy of the
# tree, with fsmgen's header line removed so that the tools do not skip the
# files, every generated package of machines/, runtime/ (the engines'
# machines), bench/ and the goldens of gen/testdata (with its stub of
# example.com/money) passes go vet and staticcheck with every check.
lint-generated:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	tar --exclude=.git --exclude=node_modules -cf - . | tar -xf - -C "$$tmp" && \
	mkdir -p "$$tmp/goldens" && cp -r gen/testdata/golden/* "$$tmp/goldens/" && \
	cd "$$tmp" && \
	pkgs=$$(grep -rl --include='*.go' '^// Code generated by fsmgen' machines runtime goldens | xargs -n1 dirname | sort -u | sed 's|^|./|') && \
	for f in $$(grep -rl --include='*.go' '^// Code generated by fsmgen' machines runtime bench goldens); do \
		sed -i '1{/^\/\/ Code generated by fsmgen/d}' "$$f"; done && \
	$(GO) mod edit -require=example.com/money@v0.0.0 -replace=example.com/money=./gen/testdata/money && \
	$(GO) vet $$pkgs && \
	$(GO) run $(STATICCHECK) -checks all $$pkgs && \
	cd bench && $(GO) vet ./machines/... && $(GO) run $(STATICCHECK) -checks all ./machines/... && \
	echo "generated code is clean under go vet and staticcheck"

# Diagrams and machine pages are part of generate.
docs:
	$(GO) generate $(filter ./machines/% ./runtime/%,$(GENERATE_DIRS))

fuzz:
	$(GO) test ./gen -run '^$$' -fuzz FuzzGenerate -fuzztime $(FUZZTIME)
	$(GO) test ./dsl -run '^$$' -fuzz FuzzFormat -fuzztime $(FUZZTIME)
