# One entry point for humans and CI. `make test` builds .venv from scratch when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: venv lint typecheck unit fast test demo bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test,demo,bench]'
	touch $(STAMP)

venv: $(STAMP)

LINTED := $(wildcard evaluator tests deploy)

lint: venv
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)
	$(BIN)/lint-imports --no-logo --no-cache

typecheck: venv
	$(BIN)/mypy

unit: venv
	$(BIN)/pytest

# the in-process tier for the edit loop: no subprocesses, servers or Prometheus
fast: venv
	$(BIN)/pytest -m "not e2e and not prometheus" -q

test: lint typecheck unit

# the reference service, the daemon against it, and Prometheus when its binary is present
demo: venv
	$(BIN)/evaluator demo

bench: venv
	$(BIN)/python -m tests.benchmarks.run

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache reports
