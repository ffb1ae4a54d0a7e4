"""The import path flyte-apps 0.1.0 pickled into Pulumi state for the reaper's provider.

The SDK pickles a dynamic provider by reference (module and class name), and the engine rebuilds it
from state for every later update and delete. State written before the package move names
``components.resources.reaper.RevisionReaperProvider``; this re-export keeps that name resolving.
Never remove it while such state may exist (``tests/components/test_reaper_state.py``)."""

from components.reaper import RevisionReaperProvider

__all__ = ["RevisionReaperProvider"]
