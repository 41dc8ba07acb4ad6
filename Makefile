# The prober's build. `make demo` and `make test` are the two commands of the
# README; everything they need comes from the Go module proxy, but for the
# tools `make test` installs with apt-get where it runs as root (make tools;
# NO_TOOLS=1 skips it).

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -X plug.directory/prober/data.version=$(VERSION)
GO      ?= go
CMDS    := plan run publish pause demo

.PHONY: all build install test short later soak vet lint tools demo fleet check bench screenshots example-site clean

all: build

build:
	@mkdir -p bin
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ $(addprefix ./cmd/,$(CMDS))

# install: a prober home for deploy/ (bin/, etc/ with the crontab line, the
# units and prober.conf written for that home, and var/); PREFIX=/srv/prober.
PREFIX ?= /srv/prober
install: build
	deploy/install.sh $(PREFIX)

# vet: no tracked binary or file over 2 MB (.ci/tracked-files), what make
# test promises the machine (.ci/test-promises), gofmt over
# the tree (no git needed: a release tarball works too), a tidy module
# (go.mod and go.sum as `go mod tidy` leaves them), go vet.
vet:
	@.ci/tracked-files
	@.ci/test-promises
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	$(GO) vet ./...

# lint: staticcheck's default checks, fetched through the Go module proxy.
lint:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

# tools: promtool, node exporter, hugo and chromium from Debian where this is
# root with apt-get (CI); tests that need one skip, saying so, where it is
# missing. NO_TOOLS=1 skips the install.
tools:
	@.ci/tools

# test: every test with the race detector, each package given TEST_TIMEOUT
# (CI's budget is 90 minutes for the whole run, the aim under 15 on 2
# loaded cores), through cmd/internal/slowtests, which prints what go test
# prints, then the 15 slowest tests, and exits with go test's status.
TEST_TIMEOUT ?= 30m
test: vet lint tools
	@mkdir -p bin
	$(GO) build -o bin/slowtests ./cmd/internal/slowtests
	bin/slowtests -n 15 -- $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) -json ./...

# short: the inner loop (docs/development.md: how long it takes and what
# -short leaves out); CI runs `make test`, which keeps every test.
short:
	$(GO) test -short -count=1 ./...

# later: every test as it will run YEARS (10) from now: the wall clock moved
# ahead in a copy of the Go toolchain (cmd/internal/latergo, kept beside
# the build cache), so that a test holding a fixed date for the future
# fails here, years before it would in CI. Without the race detector.
YEARS    ?= 10
LATER_GO ?= $(dir $(shell $(GO) env GOCACHE))later-go
later:
	$(GO) run ./cmd/internal/latergo -out $(LATER_GO)
	PATH=$(LATER_GO)/bin:$$PATH GOROOT=$(LATER_GO) GO_WALL_CLOCK_OFFSET=$$(( $(YEARS) * 31557600 )) \
		go test -count=1 -timeout $(TEST_TIMEOUT) ./...

# soak: the months-long run (soak/, docs/operating.md "What a year costs"):
# plan, run and publish over 120 simulated days (2026-11-15 to 2027-03-15)
# against scripted servers on loopback, the site held to their table; it
# prints each day's cost on disk and in time. make test runs ten days.
soak:
	$(GO) test ./soak -run '^TestSoak$$' -count=1 -v -timeout 3h -soak.days 120

demo: build
	./bin/demo -bin bin -dir demo-out

# fleet: the demo's MCP servers only, with the one-off check that reaches
# each; Ctrl-C stops them. Its own directory, so the site `make demo` made
# stays.
fleet: build
	./bin/demo -serve -bin bin -dir demo-fleet

# check URL=https://host/mcp: one check of one server now (production rules).
check: build
	@test -n "$(URL)" || { echo "usage: make check URL=https://host/mcp"; exit 2; }
	./bin/run -url "$(URL)"

# screenshots: the pages the demo publishes (TestDemo runs it as `make demo`
# does), at 390 px (a phone) and 1280 px, in headless Chromium (Debian's;
# `make tools` installs it), into docs/screenshots; the README and
# docs/site-files.md show them.
screenshots: tools
	$(GO) test ./cmd/demo -run '^TestDemo$$' -count=1 -timeout 15m -screenshots $(CURDIR)/docs/screenshots

# example-site: the example site build (examples/hugo), Hugo rendering the
# site `make demo` published in demo-out/site into demo-out/hugo.
example-site:
	$(GO) run ./examples/hugo -site demo-out/site -out demo-out/hugo

# bench: every benchmark once, through cmd/internal/benchratio, which prints
# what go test prints, then each benchmark over its baseline measured in the
# same run (and the "x-" ratios benchmarks report themselves).
bench:
	@mkdir -p bin
	$(GO) build -o bin/benchratio ./cmd/internal/benchratio
	bin/benchratio -- $(GO) test -run '^$$' -bench . -benchmem -benchtime 1x -timeout 60m -json ./...

clean:
	rm -rf bin demo-out demo-fleet var
