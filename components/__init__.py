"""flyte-apps: Flyte apps as code.

Layers (enforced by import-linter contracts in ``pyproject.toml``):

* the pure core (``constants``, ``errors``, ``durations``, ``quantities``, ``config``, ``naming``,
  ``spec``, ``knative``, ``platform``, ``render``, ``stackfile``) turns stack config into plain
  manifests; it imports neither ``pulumi`` nor ``kubernetes`` and does no network I/O;
* ``resources`` wraps the core in Pulumi components (and imports Pulumi);
* ``kube`` talks to the Kubernetes API (and imports the official client, never Pulumi);
* ``cli`` and the project's ``__main__.py`` sit on top.
"""
