"""Direct Kubernetes API access (no Pulumi), with the official ``kubernetes`` client.

Kept free of ``pulumi`` imports so the CLI and tests can use it without a Pulumi engine. It
imports the pure ``flyte_apps.core`` for every rule, and nothing above it. One job per module:

- ``errors``: the ``KubeError`` family, phrased for the person running the tool;
- ``target``: which cluster (pulumi-kubernetes' lookup order) and a fresh ``ApiClient`` for it;
- ``bounded``: that client, reading every answer within a size bound and its request's timeout;
- ``retry``: ``RetryPolicy`` and ``call``, the only retry layer, rewriting API errors;
- ``api``: typed reads, lists (paged) and deletes of custom objects and pods;
- ``replicas``: which pods are an app's replicas (Flyte's ``GetReplicas``), for status and logs;
- ``apps``: Flyte's Get, List and replica reads, and the snapshots ``status`` shows;
- ``watch``: one list-then-watch of the namespace fanned out to subscribers;
- ``logs``: replica logs read like Flyte's ``TailLogs``, resuming broken streams;
- ``reaper``: deleting a stopped app's old revisions once its stop revision is ready.
"""
