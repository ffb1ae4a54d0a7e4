"""Fixtures made with Flyte's own SDK, in a venv of their own (README.md here); no tests live here."""
