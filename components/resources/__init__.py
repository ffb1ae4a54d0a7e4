"""Pulumi components: thin wrappers that register what the pure core (``components.render``) built.

May import ``pulumi`` and ``pulumi_kubernetes``; never reads config (``__main__.py`` does) and never
builds manifests itself.
"""
