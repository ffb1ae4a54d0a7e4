"""Kept for Pulumi state written by flyte-apps 0.1.0: see ``components.resources.reaper``."""
