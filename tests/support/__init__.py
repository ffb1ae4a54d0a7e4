"""Helpers shared by the tests (imported explicitly; ``conftest.py`` holds fixtures only)."""
