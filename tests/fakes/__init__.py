"""Test doubles that speak real protocols, so tests exercise the real client libraries."""
