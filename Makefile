# fsmgen: make generate regenerates every generated file, make test runs
# every test (against a real PostgreSQL, see runtime/pgtest).

GO ?= go
FUZZTIME ?= 2m

.PHONY: all generate sqlc test check-generated bench lint docs fuzz demo

all: generate test

# The directories of the main module with //go:generate lines. go generate
# is given these rather than ./..., whose package list is made before the
# first generator runs: fsmgen removes the package of a renamed machine, and
# go generate would then fail on the files it listed there.
GENERATE_DIRS = $(shell grep -rl --include='*.go' --exclude-dir=.git --exclude-dir=testdata --exclude-dir=bench --exclude-dir=tools '^//go:generate' . | xargs -n1 dirname | sort -u)

# Regenerate the machines of machines/ and bench/ (Go code, tests, diagrams,
# pages) and the sqlc queries of db/.
generate: sqlc
	$(GO) generate $(GENERATE_DIRS)
	cd bench && $(GO) generate ./...

# sqlc is a tool of tools/go.mod, a module of its own so that its
# dependencies stay out of the main module (see tools.go). fsmgen is a tool
# of the main module's go.mod: the //go:generate lines run go tool fsmgen.
sqlc:
	cd tools && $(GO) tool sqlc generate -f ../db/sqlc.yaml

# Run the RetrieveOrGenerate demo on the PostgreSQL server DATABASE_URL
# names, or on a throwaway local cluster when it is unset.
demo:
	$(GO) run ./cmd/fsmctl demo

test:
	$(GO) vet ./...
	$(GO) test ./...
	cd bench && $(GO) vet ./... && $(GO) test ./...

# Regenerate everything in a copy of the tree and fail if any committed
# generated file differs from what the generators write now.
check-generated:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	tar --exclude=.git -cf - . | tar -xf - -C "$$tmp" && \
	$(MAKE) -s -C "$$tmp" generate >/dev/null && \
	if diff -r -x .git . "$$tmp" >"$$tmp.diff"; then rm -f "$$tmp.diff"; echo "generated files are up to date"; \
	else cat "$$tmp.diff"; rm -f "$$tmp.diff"; echo "generated files are stale: run make generate and commit the result" >&2; exit 1; fi

bench:
	cd bench && $(GO) test -run '^$$' -bench . -benchmem ./...

# Every module of the repository (the main one, bench, tools, ...) must be
# tidy: go.mod lists what the code imports, direct requirements as direct.
MODULES = $(shell find . -name go.mod -not -path './.git/*' -not -path '*/testdata/*' -exec dirname {} \; | sort)

lint:
	@for m in $(MODULES); do echo "go mod tidy -diff ($$m)"; (cd $$m && $(GO) mod tidy -diff) || exit 1; done
	$(GO) vet ./...
	@out=$$(gofmt -l . ) && if [ -n "$$out" ]; then echo "gofmt -l:"; echo "$$out"; exit 1; fi
	$(GO) tool fsmgen fmt -l machines bench | (! grep .)

# Diagrams and machine pages are part of generate.
docs:
	$(GO) generate $(filter ./machines/%,$(GENERATE_DIRS))

fuzz:
	$(GO) test ./gen -run '^$$' -fuzz FuzzGenerate -fuzztime $(FUZZTIME)
	$(GO) test ./dsl -run '^$$' -fuzz FuzzFormat -fuzztime $(FUZZTIME)
