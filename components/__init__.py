"""The Pulumi layer, and only it: it registers what the pure core planned (``flyte_apps.core.plan``) and
reads no config itself (``__main__.py`` does)."""
