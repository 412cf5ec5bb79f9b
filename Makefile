# One entry point for humans and CI. `make test` builds .venv from scratch when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: deps venv install lint format typecheck unit fast cov test image-test lock crd-validator demo bench bench-quick screenshots clean fuzz

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,demo,bench]'
	touch $(STAMP)

venv: $(STAMP)

# The Debian packages `make test` runs (command:package); without them those tests skip
# (and fail under CI=true). The one list: .ci/run calls this target, README.md names it.
SYSTEM_DEPS := promtool:prometheus prometheus:prometheus amtool:prometheus-alertmanager \
  prometheus-alertmanager:prometheus-alertmanager prometheus-pushgateway:prometheus-pushgateway \
  podman:podman buildah:buildah runc:runc mmdebstrap:mmdebstrap newuidmap:uidmap npm:npm \
  chromium:chromium chromedriver:chromium-driver
deps:
	@need=""; for tool in $(SYSTEM_DEPS); do \
	  command -v "$${tool%%:*}" >/dev/null 2>&1 || \
	    case " $$need " in *" $${tool##*:} "*) ;; *) need="$$need $${tool##*:}" ;; esac; \
	done; \
	if [ -z "$$need" ]; then echo "system packages: all present"; exit 0; fi; \
	sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	echo "installing:$$need"; \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$need >/dev/null

# `evaluator` on PATH in every new shell: a private venv under $(PREFIX)/share/evaluator and a
# link in $(PREFIX)/bin (~/.local/bin is on PATH in Debian's and most distributions' ~/.profile)
PREFIX ?= $(HOME)/.local
install:
	$(PYTHON) -m venv --clear $(PREFIX)/share/evaluator/venv
	$(PREFIX)/share/evaluator/venv/bin/python -m pip install -q '.[demo]'
	mkdir -p $(PREFIX)/bin
	ln -sf $(PREFIX)/share/evaluator/venv/bin/evaluator $(PREFIX)/bin/evaluator
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; \
	  *) echo "note: $(PREFIX)/bin is not on PATH; add it in your shell profile" ;; esac
	@echo "installed: $(PREFIX)/bin/evaluator ($$($(PREFIX)/bin/evaluator --version))"

LINTED := $(wildcard evaluator tests deploy docs)

lint: venv
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/lint-imports --no-logo --no-cache
	@# at most 3.5% of functions above complexity 10 (radon), none longer than 80 lines
	$(BIN)/python -m tests.complexity_cap evaluator
	@# the formatter wins: no hand-formatted islands in the package
	@! grep -rnE '# fmt: (skip|off)' evaluator --include='*.py' || { echo 'fmt: skip/off found (let ruff format)'; exit 1; }

# what `make lint` checks, fixed where the tools can
format: venv
	$(BIN)/ruff check --fix $(LINTED)
	$(BIN)/ruff format $(LINTED)

typecheck: venv
	$(BIN)/mypy

unit: venv crd-validator
	$(BIN)/pytest

# The Prometheus Operator's CRD schemas for the ServiceMonitor and PrometheusRule tests, from
# the npm registry at the versions tests/deploy/crd/package-lock.json pins. Without npm the
# tests skip (and fail under CI=true).
CRD := tests/deploy/crd
$(CRD)/node_modules/.stamp: $(CRD)/package-lock.json
	npm ci --prefix $(CRD) --silent --no-audit --no-fund
	touch $@

crd-validator:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory $(CRD)/node_modules/.stamp; \
	  else echo "npm not found: the CRD schema tests will skip"; fi

# the in-process tier for the edit loop: no subprocesses, servers or Prometheus
fast: venv
	$(BIN)/pytest -m "not e2e and not prometheus and not fuzz" -q

# branch coverage of the whole suite, the CLI and daemon subprocesses included (their data
# lands beside the parent's through COVERAGE_FILE); fails under [tool.coverage.report]'s floor
COVERAGE_DATA := $(CURDIR)/.coverage-data
cov: venv
	rm -rf $(COVERAGE_DATA) && mkdir -p $(COVERAGE_DATA)
	COVERAGE_FILE=$(COVERAGE_DATA)/coverage $(BIN)/coverage run -m pytest -q -p no:cacheprovider
	COVERAGE_FILE=$(COVERAGE_DATA)/coverage $(BIN)/coverage combine -q
	COVERAGE_FILE=$(COVERAGE_DATA)/coverage $(BIN)/coverage report

test: lint typecheck unit image-test

# The generated hostile tier (tests/faults/test_fuzz_*.py, marker `fuzz`) for longer than
# `make test` runs it (one round, seed 0, two variants per surface and block): FUZZ_ROUNDS
# rounds of every variant from FUZZ_SEED (default: the time, printed, so a failure
# reproduces with FUZZ_SEED=<seed>). FUZZ_FIGURES=file.json keeps the figures per class.
FUZZ_ROUNDS ?= 3
FUZZ_PER_PAIR ?= 0
fuzz: venv
	@seed=$${FUZZ_SEED:-$$(date +%s)}; echo "make fuzz: FUZZ_SEED=$$seed FUZZ_ROUNDS=$(FUZZ_ROUNDS) FUZZ_PER_PAIR=$(FUZZ_PER_PAIR)"; \
	  FUZZ_SEED=$$seed FUZZ_ROUNDS=$(FUZZ_ROUNDS) FUZZ_PER_PAIR=$(FUZZ_PER_PAIR) \
	  $(BIN)/pytest -m fuzz tests/faults -q --timeout 3600

# deploy/Dockerfile built with podman from a local base and run on a loopback-only network
# namespace (tests/image/). Skipped where podman cannot run, except in CI, where it fails.
image-test: venv
	$(BIN)/pytest tests/image -q --timeout 900

# deploy/requirements.lock: the image's dependencies, pinned with hashes (a test checks it is
# current with pyproject.toml). uv resolves for the image's Python and libc, not the host's.
lock: venv
	$(BIN)/python -m pip install -q uv
	$(BIN)/uv pip compile pyproject.toml --extra demo --generate-hashes --quiet \
	  --python-version 3.11 --python-platform x86_64-manylinux_2_28 \
	  --custom-compile-command "make lock" -o deploy/requirements.lock

# the reference service, the daemon against it, and Prometheus when its binary is present
demo: venv
	$(BIN)/evaluator demo

# promptfoo is the benchmark's real alternative (tests/benchmarks/bench_goals.py). 0.121.20 is
# the newest release that still runs on Debian's Node.js 20 (0.122 requires Node 22.22).
PROMPTFOO_VERSION := 0.121.20
PROMPTFOO := bench-results/promptfoo/node_modules/.bin/promptfoo

bench: venv $(PROMPTFOO)
	$(BIN)/python -m tests.benchmarks.run

# the goal modules only, fewer cases and repeats (what docs/performance.md names quick mode)
bench-quick: venv $(PROMPTFOO)
	$(BIN)/python -m tests.benchmarks.run --quick

$(PROMPTFOO):
	@if command -v npm >/dev/null; then \
		mkdir -p bench-results/promptfoo && \
		npm install --prefix bench-results/promptfoo --no-audit --no-fund --loglevel=error \
			promptfoo@$(PROMPTFOO_VERSION) || echo "promptfoo not installed: its comparison is skipped"; \
	else echo "npm not found: the promptfoo comparison is skipped"; fi

# the status page, a case view and a gate report as docs/images/*.png (real service, daemon,
# and Debian's Chromium)
screenshots: venv
	$(BIN)/python -m tests.pages.screenshots

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .coverage-data reports
