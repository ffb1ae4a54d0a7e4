"""The real-engine scenarios (`make e2e`), as pytest tests: never collected by `make test`
(``tests/e2e/conftest.py`` ignores this directory), run by ``python -m tests.e2e.run``."""
