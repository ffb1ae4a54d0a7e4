"""`make test` (pytest over ``tests``) never collects, nor imports, the real-engine scenarios: they need
the tools ``make e2e-tools`` builds and a network namespace of their own, and run through
``python -m tests.e2e.run`` (`make e2e`), which names ``tests/e2e/scenarios`` itself (an explicit path
is collected whatever this says)."""

from __future__ import annotations

collect_ignore = ["scenarios"]
