"""The Pulumi layer, and only it: ``FlyteApp``, ``FlyteManager``, the ``RevisionReaper`` dynamic
resource, the Knative settings patches and ``deploy``, which registers a plan that the pure core
(``flyte_apps.core.plan``) built. Every module here imports ``pulumi``; none reads config
(``__main__.py`` does) or builds manifests itself."""
