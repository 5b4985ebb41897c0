# trainop developer entry points. `make check` is the one test command (README, .ci/run).
# The virtual environment and every dependency come from the package registries; nothing
# relies on what happens to be installed on the machine.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: help venv check lint format typecheck contracts test test-slow manifests clean

help:
	@echo "make check      install everything and run every check (format, lint, mypy, contracts, tests)"
	@echo "make manifests  regenerate manifests/crds and docs/api-reference.md"
	@echo "make test-slow  the slow integration suites (marker: slow)"
	@echo "make format     apply ruff format and the auto-fixable lint rules"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

check: lint typecheck contracts test

lint: $(STAMP)
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/ruff check src tests benchmarks

format: $(STAMP)
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

contracts: $(STAMP)
	$(BIN)/lint-imports

test: $(STAMP)
	$(BIN)/pytest -q

test-slow: $(STAMP)
	$(BIN)/pytest -q -m slow

manifests: $(STAMP)
	$(BIN)/trainop manifests generate

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
