"""Direct Kubernetes API access (no Pulumi): cluster lookup, retries, errors, revision reaping.

Kept free of ``pulumi`` imports so the CLI and tests can use it without a Pulumi engine.
"""
