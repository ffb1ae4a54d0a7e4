# flyte-apps: `make test` (set up + lint + types + tests), `make render` (offline, the dev stack);
# the real engine: `make e2e-tools` (build once, from Go modules), `make e2e` (tests/e2e/README.md).
# The Python versions .venv may be built with; `make setup PYTHON=python3.12` picks one, else the first
# of python3.13, python3.12, python3.11, python3 that runs and is one of these (.ci/pick-python.sh).
PYTHON_VERSIONS := 3.11 3.12 3.13
PYTHON ?=
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
STACK ?= dev

.PHONY: setup test lint typecheck compat pytest render check bench package-schema sdk-fixtures vectors e2e-tools e2e e2e-faults e2e-cluster-up e2e-cluster-down clean FORCE

setup: $(STAMP)

# Checked on every `make setup`: an unsupported or missing interpreter is refused (one line, before
# .venv is touched); a .venv built by another interpreter (other version or executable) is rebuilt.
# Nothing is created or removed when .venv already matches, so the stamp below stays valid.
$(VENV)/pyvenv.cfg: FORCE
	$(eval VENV_PLAN := $(shell sh .ci/pick-python.sh '$(VENV)' '$(PYTHON)' $(PYTHON_VERSIONS)))
	$(if $(filter refuse,$(firstword $(VENV_PLAN))),$(error make setup: $(wordlist 2,999,$(VENV_PLAN))))
	$(if $(filter rebuild,$(firstword $(VENV_PLAN))),@echo 'make setup: $(wordlist 3,999,$(VENV_PLAN))' >&2)
	@$(if $(filter rebuild,$(firstword $(VENV_PLAN))),rm -rf $(VENV))
	@$(if $(filter create rebuild,$(firstword $(VENV_PLAN))),$(word 2,$(VENV_PLAN)) -m venv $(VENV) || { rm -rf $(VENV); exit 1; })

# Re-installs only when the pins or the project metadata change (or .venv was just built).
# Silent recipes (messages on stderr): `make render > stack.yaml` must hold only YAML.
$(STAMP): requirements.lock pyproject.toml $(VENV)/pyvenv.cfg
	@echo 'make setup: installing the pinned dependencies and flyte-apps into $(VENV)' >&2
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements.lock >&2
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e . >&2
	@touch $(STAMP)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/actionlint .github/workflows/*.yml

typecheck: setup
	$(BIN)/mypy flyte_apps components tests bench __main__.py
	$(BIN)/mypy policies
	$(BIN)/mypy .ci/compat_wheels.py

# Python 3.12 and 3.13 without their interpreters: every pin in requirements.lock has a wheel for
# them (this platform) and pulls in nothing outside the lock, and the code type-checks as 3.13.
# About a minute on 2 cores, cold or warm (pip's resolver is CPU-bound), plus mypy's first 3.13 run.
COMPAT_VERSIONS := 3.12 3.13

compat: setup
	$(BIN)/python .ci/compat_wheels.py $(COMPAT_VERSIONS)
	$(BIN)/mypy --python-version 3.13 flyte_apps components tests bench __main__.py
	$(BIN)/mypy --python-version 3.13 policies

pytest: setup
	$(BIN)/python -m pytest

test: lint typecheck compat pytest

render: setup
	@$(BIN)/flyte-apps render --stack $(STACK)

check: setup
	@$(BIN)/flyte-apps check --stack $(STACK)

# Flyte's SDK (tests/sdk/README.md) in .sdk-venv writes tests/fixtures/sdk. Needs PyPI; not part of `make test`.
# The component package's schema (components/plugin/schema.json): what every language's SDK is made
# from. tests/components/test_package_schema.py fails until the committed copy matches the code.
package-schema: setup
	$(BIN)/python -c 'from components.package import package_version, schema_text; print(schema_text(package_version()), end="")' > components/plugin/schema.json

sdk-fixtures: setup
	$(BIN)/python tests/sdk/make_fixtures.py

# Kubernetes' own validators (tests/vectors/judge, Go from the module proxy) write
# tests/fixtures/kube_validation_vectors.json, kubectl (on PATH, else the one `make e2e-tools` built)
# writes tests/fixtures/go_yaml_vectors.json, and protobuf-go (the spec-judge `make e2e-tools` built)
# writes tests/fixtures/go_spec_corpus.json; tests/core/test_kube_vectors.py, tests/cli/test_go_readers.py
# and tests/core/test_goorder.py read them. Not part of `make test`.
KUBECTL ?= $(shell command -v kubectl || echo "$$($(BIN)/python -m tests.e2e.build --print kubernetes 2>/dev/null | cut -f2)/bin/kubectl")
vectors: setup
	$(BIN)/python -m tests.vectors.generate
	$(BIN)/python -m tests.vectors.child_names
	$(BIN)/python -m tests.vectors.go_yaml "$(KUBECTL)"
	$(BIN)/python -m tests.vectors.go_specs

# Benchmarks (bench/RESULTS.md): 1.75 to 2.5 hours on 2 cores (the real engine's rows at 100 and 500 apps 75 to 115 minutes,
# capped at 2.5 hours; the stops of apps with pods, on the e2e node, 9), one markdown table. Not part of `make test`.
# Their own dependency (bench/requirements.txt: py-spy, for the profiles of bench/RESULTS.md "Profiling").
bench: setup
	$(BIN)/pip install --quiet --disable-pip-version-check -r bench/requirements.txt
	$(BIN)/python -m bench.run

# The real engine (tests/e2e/README.md). e2e-tools builds the Pulumi CLI, pulumi-resource-kubernetes,
# etcd, Kubernetes (the control plane and a node's kubelet, scheduler and proxy), Knative Serving,
# containerd, CNI, CoreDNS, Traefik and the images from Go modules (runc and nft unpacked from Debian's
# packages) into ~/.cache/flyte-apps-e2e (FLYTE_APPS_E2E_CACHE), keyed by tests/e2e/versions.toml:
# tests/e2e/README.md gives the cold time on 2 cores; seconds after. e2e runs the scenarios, pytest
# tests under tests/e2e/scenarios, in a network namespace of its own (about 14 minutes warm); E2E_ARGS goes to
# pytest: `make e2e E2E_ARGS='-k stop_start'`, `E2E_ARGS='-x --keep'`. Neither is part of `make test`.
E2E_ARGS ?=

e2e-tools: setup
	@$(BIN)/python -m tests.e2e.build

e2e: setup
	@$(BIN)/python -m tests.e2e.run $(E2E_ARGS)

# The fault scenarios (tests/e2e/scenarios/test_faults.py and test_scale_load.py, issue 40): a proxy of
# ours cuts the API server off in the middle of `pulumi up`, the node is lost, 200 apps run under load;
# the documented repair must converge. About 25 minutes warm. Needs `make e2e-tools`.
e2e-faults: setup
	@$(BIN)/python -m tests.e2e.run --faults $(E2E_ARGS)

# A control plane with Knative on 127.0.0.1 to try a stack against by hand; prints `export KUBECONFIG=...`.
e2e-cluster-up: setup
	@$(BIN)/python -m tests.e2e.cluster up

e2e-cluster-down: setup
	@$(BIN)/python -m tests.e2e.cluster down

clean:
	rm -rf $(VENV) build *.egg-info
