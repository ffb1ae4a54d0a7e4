# flyte-apps: `make test` (set up + lint + types + tests), `make render` (offline, the dev stack).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
STACK ?= dev

.PHONY: setup test lint typecheck pytest render check clean

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
	$(BIN)/mypy components tests __main__.py
	$(BIN)/mypy policies

pytest: setup
	$(BIN)/python -m pytest

test: lint typecheck pytest

render: setup
	$(BIN)/flyte-apps render --stack $(STACK)

check: setup
	$(BIN)/flyte-apps check --stack $(STACK)

clean:
	rm -rf $(VENV) build *.egg-info
