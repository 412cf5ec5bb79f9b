# One entry point for humans and CI. `make test` builds .venv from scratch when needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: venv lint typecheck unit test image-test lock demo bench clean

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

typecheck: venv
	$(BIN)/mypy

unit: venv
	$(BIN)/pytest

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
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache reports
