# flyte-apps: `make test` (set up + lint + types + tests), `make render` (offline, the dev stack).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
STACK ?= dev

.PHONY: setup test lint typecheck pytest render check bench clean

setup: $(STAMP)

# Re-installs only when the pins or the project metadata change.
$(STAMP): requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $(STAMP)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: setup
	$(BIN)/mypy flyte_apps components tests bench __main__.py
	$(BIN)/mypy policies

pytest: setup
	$(BIN)/python -m pytest

test: lint typecheck pytest

render: setup
	$(BIN)/flyte-apps render --stack $(STACK)

check: setup
	$(BIN)/flyte-apps check --stack $(STACK)

# Benchmarks (bench/RESULTS.md): about 8 minutes on 2 cores, one markdown table. Not part of `make test`.
bench: setup
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) build *.egg-info
