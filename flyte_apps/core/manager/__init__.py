"""Pure: the Flyte manager, from the stack config key ``flyte-apps:manager``.

Two generations of the manager image exist, and one generated ``config.yaml`` serves both, because
the manager's config loader (flytestdlib on viper) ignores keys it does not know:

* the seed's manager: Runs service on 8090, Queue service on 8089, executor health on 8081, and all
  state in one SQLite file (keys ``manager.*``, ``database.*``, ``logger``);
* Flyte's current main: every service on ``runs.server.port``, executor health on
  ``executor.healthProbeBindAddress``, PostgreSQL only (``runs.database.postgres``), a pod webhook
  (``webhook.*``) and the apps subsystem (``internalApps.*``, generated from ``flyte-apps:platform``
  so that the manager and this program's KServices agree).

Modules: ``layout`` (object names, paths and ports), ``models`` (the config section and its
validation, which collects every problem with its key path), ``config_file`` (the generated
``config.yaml``), ``crd`` (the TaskAction CRD, shipped as ``taskactions.yaml``) and ``objects``
(every Kubernetes object the manager needs).
"""
