"""Names of the Flyte manager's objects, and the files, paths and ports in its container (the root
filesystem is read-only)."""

from __future__ import annotations

from typing import Final

MANAGER_NAME: Final = "flyte-manager"
"""ServiceAccount, ClusterRole, ClusterRoleBinding and Deployment."""
CONFIG_MAP_NAME: Final = "flyte-manager-config"
DATA_CLAIM_NAME: Final = "flyte-manager-data"
RUNS_SERVICE_NAME: Final = "flyte-manager-runs"
QUEUE_SERVICE_NAME: Final = "flyte-manager-queue"
HEALTH_SERVICE_NAME: Final = "flyte-manager-health"
# Flyte's webhook.serviceName default: the MutatingWebhookConfiguration the manager writes at startup
# points the API server at this Service, on WEBHOOK_SERVICE_PORT.
WEBHOOK_SERVICE_NAME: Final = "flyte-pod-webhook"
WEBHOOK_SERVICE_PORT: Final = 443
CONTAINER_NAME: Final = "manager"
CONFIG_FILE_KEY: Final = "config.yaml"
CONFIG_DIR: Final = "/etc/flyte/config"
CONFIG_PATH: Final = f"{CONFIG_DIR}/{CONFIG_FILE_KEY}"
DATA_DIR: Final = "/var/lib/flyte"
SQLITE_FILE: Final = f"{DATA_DIR}/flyte.db"
TMP_DIR: Final = "/tmp"  # an emptyDir of the pod's own
WEBHOOK_CERT_DIR: Final = f"{TMP_DIR}/flyte/webhook/certs"
DB_PASSWORD_DIR: Final = "/etc/flyte/secrets/database"
DB_PASSWORD_FILE: Final = "password"
DB_PASSWORD_PATH: Final = f"{DB_PASSWORD_DIR}/{DB_PASSWORD_FILE}"
HEALTH_PATH: Final = "/healthz"
READY_PATH: Final = "/readyz"
ANY_HOST: Final = "0.0.0.0"  # listen on every interface: the Services reach the pod by its IP
NONROOT_UID: Final = 65532  # distroless' "nonroot"; any non-zero id works with the upstream image
SECRET_FILE_MODE: Final = 0o440  # owner and fsGroup may read the password file, nobody else
PORT_KEYS: Final = ("runs", "queue", "health", "webhook")
