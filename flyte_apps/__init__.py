"""flyte-apps: Flyte apps as code. Everything that is not the Pulumi layer (``components/``).

Layers, top to bottom (import-linter contracts in ``pyproject.toml`` hold them):

* ``cli``: the ``flyte-apps`` command line;
* ``components`` (beside this package: the Pulumi layer) and ``policy`` (the policy rules);
* ``kube``: Kubernetes API access with the official client;
* ``core``: pure; stack config in, manifests, specs and status out. No pulumi, no kubernetes, no I/O.

A layer imports only the layers below it. Citations such as ``(c)4`` or ``(j)6`` name a behaviour of
Flyte's own Go implementation: docs/upstream.md says what each stands for.
"""
