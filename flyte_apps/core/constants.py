"""Every label, annotation, env var name and type token the project writes or reads.

Values that belong to Flyte's app service must match upstream byte for byte (reference (b));
values that belong to Knative or Kubernetes say so in a comment.
"""

from typing import Final

PROJECT_NAME: Final = "flyte-apps"
"""The Pulumi project name; stack config keys live under ``flyte-apps:``."""

# --- Flyte labels on the KService (reference (b)) -------------------------------------------
LABEL_APP_MANAGED: Final = "flyte.org/app-managed"
LABEL_PROJECT: Final = "flyte.org/project"
LABEL_DOMAIN: Final = "flyte.org/domain"
LABEL_APP_NAME: Final = "flyte.org/app-name"
LABEL_APP_STOPPED: Final = "flyte.org/app-stopped"
TRUE: Final = "true"

# Knative networking: "cluster-local" keeps a KService off the public ingress.
LABEL_VISIBILITY: Final = "networking.knative.dev/visibility"
VISIBILITY_CLUSTER_LOCAL: Final = "cluster-local"

# Set by Knative on the pods of a revision (labels on the KService are not propagated to pods).
LABEL_KNATIVE_SERVICE: Final = "serving.knative.dev/service"
LABEL_KNATIVE_REVISION: Final = "serving.knative.dev/revision"
# Knative's sidecar in every app pod; never the user container.
QUEUE_PROXY_CONTAINER: Final = "queue-proxy"

# Kubernetes' recommended label; marks objects this program owns.
LABEL_MANAGED_BY: Final = "app.kubernetes.io/managed-by"
MANAGED_BY_PULUMI: Final = "pulumi"

# Kubernetes' recommended label; on every manager object, and its pods' selector.
LABEL_NAME: Final = "app.kubernetes.io/name"

# --- The Flyte manager ----------------------------------------------------------------------
# On the pod template: a new config.yaml rolls the pods (a mounted ConfigMap change alone does not).
ANNOTATION_CONFIG_SHA: Final = "flyte.org/config-sha256"
# Read by pulumi-kubernetes on a *Patch resource: take over fields another field manager (Helm,
# kubectl) set on Knative's ConfigMaps instead of failing with a server-side-apply conflict.
ANNOTATION_PATCH_FORCE: Final = "pulumi.com/patchForce"
# On the List `render -o json` prints: the objects the program patches rather than owns.
ANNOTATION_PATCHES: Final = "flyte-apps/patches"
# Downward-API env vars Flyte's webhook setup reads (owner references, Secret namespace).
ENV_POD_NAME: Final = "POD_NAME"
ENV_POD_NAMESPACE: Final = "POD_NAMESPACE"

# --- Flyte annotations on the KService ------------------------------------------------------
ANNOTATION_SPEC_SHA: Final = "flyte.org/spec-sha"
ANNOTATION_APP_ID: Final = "flyte.org/app-id"
ANNOTATION_APP_ORG: Final = "flyte.org/app-org"
ANNOTATION_SPEC: Final = "flyte.org/spec"

# --- Knative autoscaling annotations on the revision template -------------------------------
ANNOTATION_MIN_SCALE: Final = "autoscaling.knative.dev/min-scale"
ANNOTATION_MAX_SCALE: Final = "autoscaling.knative.dev/max-scale"
ANNOTATION_INITIAL_SCALE: Final = "autoscaling.knative.dev/initial-scale"
ANNOTATION_METRIC: Final = "autoscaling.knative.dev/metric"
ANNOTATION_TARGET: Final = "autoscaling.knative.dev/target"
ANNOTATION_WINDOW: Final = "autoscaling.knative.dev/window"
METRIC_RPS: Final = "rps"
METRIC_CONCURRENCY: Final = "concurrency"

# --- Flyte secrets on the revision template (pod webhook contract) --------------------------
ANNOTATION_SECRET_PREFIX: Final = "flyte.secrets/s"
SECRET_LABEL_ORGANIZATION: Final = "organization"
SECRET_LABEL_PROJECT: Final = "project"
SECRET_LABEL_DOMAIN: Final = "domain"
SECRET_LABEL_INJECT: Final = "inject-flyte-secrets"
SECRET_ORGANIZATION: Final = "flyte"

# --- Env vars injected into the user container ----------------------------------------------
ENV_ENDPOINT_PATTERN: Final = "INTERNAL_APP_ENDPOINT_PATTERN"
ENV_EXECUTION_PROJECT: Final = "FLYTE_INTERNAL_EXECUTION_PROJECT"
ENV_EXECUTION_DOMAIN: Final = "FLYTE_INTERNAL_EXECUTION_DOMAIN"
INJECTED_ENV_VARS: Final = (ENV_ENDPOINT_PATTERN, ENV_EXECUTION_PROJECT, ENV_EXECUTION_DOMAIN)

# --- Other Flyte literals -------------------------------------------------------------------
USER_CONTAINER_NAME: Final = "app"
DEFAULT_ORG: Final = "flyte"
MAX_KSERVICE_NAME_LEN: Final = 63
SUFFIX_TOKEN_PROJECT: Final = "{{ project }}"
SUFFIX_TOKEN_DOMAIN: Final = "{{ domain }}"
DEFAULT_SUFFIX_TEMPLATE: Final = "{{ project }}-{{ domain }}"
APP_FQDN_PLACEHOLDER: Final = "{app_fqdn}"

# --- Kubernetes / Knative API identities ----------------------------------------------------
KNATIVE_API_VERSION: Final = "serving.knative.dev/v1"
KNATIVE_GROUP: Final = "serving.knative.dev"
KNATIVE_VERSION: Final = "v1"
KSERVICE_KIND: Final = "Service"
KSERVICE_PLURAL: Final = "services"
REVISION_PLURAL: Final = "revisions"

# --- Pulumi type tokens (never change: they are part of every URN in state) -----------------
TYPE_FLYTE_APP: Final = "flyte:apps:FlyteApp"
TYPE_PLATFORM: Final = "flyte:apps:Platform"
TYPE_KSERVICE: Final = "kubernetes:serving.knative.dev/v1:Service"
TYPE_NAMESPACE: Final = "kubernetes:core/v1:Namespace"
TYPE_NAMESPACE_PATCH: Final = "kubernetes:core/v1:NamespacePatch"
TYPE_REVISION_REAPER: Final = "pulumi-python:dynamic/flyte:RevisionReaper"

# Stack config keys read by pulumi-kubernetes; we read the same ones for our own clients.
CONFIG_KUBECONFIG: Final = "kubernetes:kubeconfig"
CONFIG_KUBE_CONTEXT: Final = "kubernetes:context"
