# One entry point for humans and CI. `make test` builds .venv from scratch when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: venv install lint format typecheck unit fast test image-test lock demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,demo,bench]'
	touch $(STAMP)

venv: $(STAMP)

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

# what `make lint` checks, fixed where the tools can
format: venv
	$(BIN)/ruff check --fix $(LINTED)
	$(BIN)/ruff format $(LINTED)

typecheck: venv
	$(BIN)/mypy

unit: venv
	$(BIN)/pytest

# the in-process tier for the edit loop: no subprocesses, servers or Prometheus
fast: venv
	$(BIN)/pytest -m "not e2e and not prometheus" -q

test: lint typecheck unit image-test

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

bench: venv
	$(BIN)/python -m tests.benchmarks.run

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .coverage-data reports
