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
# Pod phases (``status.phase``), as the API server writes them.
POD_PENDING: Final = "Pending"
POD_RUNNING: Final = "Running"
POD_SUCCEEDED: Final = "Succeeded"
POD_FAILED: Final = "Failed"

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
ANNOTATION_PROGRESS_DEADLINE: Final = "serving.knative.dev/progress-deadline"
ANNOTATION_SCALE_DOWN_DELAY: Final = "autoscaling.knative.dev/scale-down-delay"
ANNOTATION_POD_RETENTION: Final = "autoscaling.knative.dev/scale-to-zero-pod-retention-period"
ANNOTATION_TARGET_UTILIZATION: Final = "autoscaling.knative.dev/target-utilization-percentage"
ANNOTATION_TARGET_BURST_CAPACITY: Final = "autoscaling.knative.dev/target-burst-capacity"
ANNOTATION_ACTIVATION_SCALE: Final = "autoscaling.knative.dev/activation-scale"
FIELD_CONTAINER_CONCURRENCY: Final = "containerConcurrency"
KNATIVE_KNOB_ANNOTATIONS: Final = (
    ANNOTATION_PROGRESS_DEADLINE,
    ANNOTATION_SCALE_DOWN_DELAY,
    ANNOTATION_POD_RETENTION,
    ANNOTATION_INITIAL_SCALE,
    ANNOTATION_TARGET_UTILIZATION,
    ANNOTATION_TARGET_BURST_CAPACITY,
    ANNOTATION_ACTIVATION_SCALE,
)
"""The revision-template annotations an app's ``knative`` settings write (not in Flyte's spec)."""
KNATIVE_PROGRESS_DEADLINE_DEFAULT_S: Final = 600
"""Knative's default progress deadline (config-deployment ``progress-deadline``: 10 minutes)."""
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
KNATIVE_ENV_PORT: Final = "PORT"
KNATIVE_RESERVED_ENV_VARS: Final = (KNATIVE_ENV_PORT, "K_SERVICE", "K_CONFIGURATION", "K_REVISION")
"""Env vars Knative sets in a revision's serving container; its webhook refuses a revision that sets one
(knative.dev/serving v0.48.2, ``pkg/apis/serving/k8s_validation.go``). Sidecars and init containers
may set ``PORT``."""

# --- Other Flyte literals -------------------------------------------------------------------
USER_CONTAINER_NAME: Final = "app"
DEFAULT_ORG: Final = "flyte"
MAX_KSERVICE_NAME_LEN: Final = 63
SUFFIX_TOKEN_PROJECT: Final = "{{ project }}"
SUFFIX_TOKEN_DOMAIN: Final = "{{ domain }}"
DEFAULT_SUFFIX_TEMPLATE: Final = "{{ project }}-{{ domain }}"
APP_FQDN_PLACEHOLDER: Final = "{app_fqdn}"

# --- Pod payloads, GPUs and shared memory ---------------------------------------------------
# Flyte's Kubernetes plugin defaults (flytek8s config): the GPU's extended resource name and the node
# labels (and matching taints) that place a pod on a given accelerator and partition size.
DEFAULT_GPU_RESOURCE_NAME: Final = "nvidia.com/gpu"
DEFAULT_CLUSTER_IDENTIFIER: Final = "flyte-apps"
"""pulumi-kubernetes' ``clusterIdentifier`` of the stack's providers unless ``platform.clusterIdentifier``
names another: while it stays the same, no change of kubeconfig or context replaces the provider (which
would delete and create every object of the stack)."""
DEFAULT_GPU_DEVICE_NODE_LABEL: Final = "k8s.amazonaws.com/accelerator"
DEFAULT_GPU_PARTITION_SIZE_NODE_LABEL: Final = "k8s.amazonaws.com/gpu-partition-size"
# The key Flyte's SDK uses for GPUs in a resource map; never a Kubernetes resource name.
GPU_RESOURCE_KEY: Final = "gpu"
# flyteidl2.core.SharedMemory as Flyte's SDK fills it in; "auto" means no size limit.
SHARED_MEMORY_MOUNT_PATH: Final = "/dev/shm"
SHARED_MEMORY_MOUNT_NAME: Final = "flyte-shm"
SHARED_MEMORY_AUTO: Final = "auto"
# Kubernetes: an emptyDir backed by RAM (tmpfs), the volume Flyte's plugin mounts as shared memory.
STORAGE_MEDIUM_MEMORY: Final = "Memory"
# Kubernetes node-selector operators and the taint effect Flyte's plugin uses to place GPU pods.
NODE_SELECTOR_IN: Final = "In"
NODE_SELECTOR_DOES_NOT_EXIST: Final = "DoesNotExist"
TOLERATION_EQUAL: Final = "Equal"
TOLERATION_EXISTS: Final = "Exists"
TAINT_NO_SCHEDULE: Final = "NoSchedule"
# Label and annotation domains that Flyte, its secret webhook and Knative own on a revision template:
# an app's pod metadata may not use them (applyPodMetadata), so it never overrides them.
RESERVED_TEMPLATE_DOMAINS: Final = (
    "flyte.org",
    "flyte.secrets",
    "serving.knative.dev",
    "autoscaling.knative.dev",
    "networking.knative.dev",
)

# --- Knative feature flags: keys of knative-serving/config-features -------------------------
# Knative refuses a revision whose pod spec uses a field behind a flag the cluster does not enable.
KNATIVE_FEATURE_ENABLED: Final = "enabled"
KNATIVE_FEATURE_ALLOWED: Final = "allowed"  # some flags accept "allowed" as well as "enabled"
FLAG_AFFINITY: Final = "kubernetes.podspec-affinity"
FLAG_FIELDREF: Final = "kubernetes.podspec-fieldref"
FLAG_ADD_CAPABILITIES: Final = "kubernetes.containerspec-addcapabilities"
FLAG_MOUNT_PROPAGATION: Final = "kubernetes.podspec-volumes-mount-propagation"
FLAG_DNS_CONFIG: Final = "kubernetes.podspec-dnsconfig"
FLAG_DNS_POLICY: Final = "kubernetes.podspec-dnspolicy"
FLAG_HOST_ALIASES: Final = "kubernetes.podspec-hostaliases"
FLAG_HOST_IPC: Final = "kubernetes.podspec-hostipc"
FLAG_HOST_NETWORK: Final = "kubernetes.podspec-hostnetwork"
FLAG_HOST_PID: Final = "kubernetes.podspec-hostpid"
FLAG_INIT_CONTAINERS: Final = "kubernetes.podspec-init-containers"
FLAG_NODE_SELECTOR: Final = "kubernetes.podspec-nodeselector"
FLAG_PRIORITY_CLASS_NAME: Final = "kubernetes.podspec-priorityclassname"
FLAG_RUNTIME_CLASS_NAME: Final = "kubernetes.podspec-runtimeclassname"
FLAG_SCHEDULER_NAME: Final = "kubernetes.podspec-schedulername"
FLAG_SECURITY_CONTEXT: Final = "kubernetes.podspec-securitycontext"
FLAG_SHARE_PROCESS_NAMESPACE: Final = "kubernetes.podspec-shareprocessnamespace"
FLAG_TOLERATIONS: Final = "kubernetes.podspec-tolerations"
FLAG_TOPOLOGY_SPREAD: Final = "kubernetes.podspec-topologyspreadconstraints"
FLAG_VOLUMES_CSI: Final = "kubernetes.podspec-volumes-csi"
FLAG_VOLUMES_EMPTYDIR: Final = "kubernetes.podspec-volumes-emptydir"  # Knative enables it by default
FLAG_VOLUMES_EPHEMERAL: Final = "kubernetes.podspec-volumes-ephemeral"
FLAG_VOLUMES_HOSTPATH: Final = "kubernetes.podspec-volumes-hostpath"
FLAG_VOLUMES_IMAGE: Final = "kubernetes.podspec-volumes-image"
FLAG_PVC: Final = "kubernetes.podspec-persistent-volume-claim"
# Not a note in Knative's CRD but a rule of its admission: a claim that is not read-only needs it too.
FLAG_PVC_WRITE: Final = "kubernetes.podspec-persistent-volume-write"

# --- Kubernetes / Knative API identities ----------------------------------------------------
KNATIVE_API_VERSION: Final = "serving.knative.dev/v1"
KNATIVE_GROUP: Final = "serving.knative.dev"
KNATIVE_VERSION: Final = "v1"
KSERVICE_KIND: Final = "Service"
KSERVICE_PLURAL: Final = "services"
REVISION_PLURAL: Final = "revisions"
# Knative's custom domains: a DomainMapping routes a host to a KService (and exposes it even when the
# KService is cluster-local); it only becomes Ready once a ClusterDomainClaim lets its namespace map
# that host.
DOMAIN_MAPPING_VERSION: Final = "v1beta1"
DOMAIN_MAPPING_API_VERSION: Final = f"{KNATIVE_GROUP}/{DOMAIN_MAPPING_VERSION}"
DOMAIN_MAPPING_KIND: Final = "DomainMapping"
DOMAIN_MAPPING_PLURAL: Final = "domainmappings"
DOMAIN_CLAIM_API_VERSION: Final = "networking.internal.knative.dev/v1alpha1"
DOMAIN_CLAIM_KIND: Final = "ClusterDomainClaim"
# Kubernetes' default cluster domain: names under it resolve only inside the cluster.
CLUSTER_LOCAL_DOMAIN: Final = "cluster.local"

# --- Pulumi type tokens (never change: they are part of every URN in state) -----------------
PACKAGE_NAME: Final = "flyte"
"""The component package's name; its module ``apps`` holds the components both front doors register."""
TOKEN_PREFIX: Final = f"{PACKAGE_NAME}:apps:"
TYPE_FLYTE_APP: Final = f"{TOKEN_PREFIX}FlyteApp"
TYPE_FLYTE_APPS: Final = f"{TOKEN_PREFIX}FlyteApps"
TYPE_KSERVICE: Final = "kubernetes:serving.knative.dev/v1:Service"
TYPE_NAMESPACE: Final = "kubernetes:core/v1:Namespace"
TYPE_NAMESPACE_PATCH: Final = "kubernetes:core/v1:NamespacePatch"
# Two reapers, two tokens: the stack-config program's dynamic resource and the package's own resource
# (the dynamic token is what the SDK makes of ``components.reaper.RevisionReaper``'s module and name).
TYPE_DYNAMIC_REVISION_REAPER: Final = "pulumi-python:dynamic/flyte:RevisionReaper"
TYPE_PACKAGE_REVISION_REAPER: Final = f"{TOKEN_PREFIX}RevisionReaper"
TYPE_CUSTOM_DOMAINS: Final = f"{TOKEN_PREFIX}CustomDomains"
TYPE_DOMAIN_MAPPING: Final = f"kubernetes:{DOMAIN_MAPPING_API_VERSION}:{DOMAIN_MAPPING_KIND}"
TYPE_DOMAIN_CLAIM: Final = f"kubernetes:{DOMAIN_CLAIM_API_VERSION}:{DOMAIN_CLAIM_KIND}"

# Stack config keys read by pulumi-kubernetes; we read the same ones for our own clients.
CONFIG_KUBECONFIG: Final = "kubernetes:kubeconfig"
CONFIG_KUBE_CONTEXT: Final = "kubernetes:context"

# --- Outputs of an app (the components' registered outputs, the package schema's, the stack export) ---
OUTPUT_KSERVICE_NAME: Final = "kserviceName"
OUTPUT_NAMESPACE: Final = "namespace"
OUTPUT_PUBLIC_URL: Final = "publicUrl"
OUTPUT_INTERNAL_URL: Final = "internalUrl"
OUTPUT_SPEC_SHA: Final = "specSha"
OUTPUT_CUSTOM_URLS: Final = "customUrls"
APP_OUTPUTS: Final = (
    OUTPUT_KSERVICE_NAME,
    OUTPUT_NAMESPACE,
    OUTPUT_PUBLIC_URL,
    OUTPUT_INTERNAL_URL,
    OUTPUT_SPEC_SHA,
    OUTPUT_CUSTOM_URLS,
)
"""Every output of an app, in the order ``AppPlan.exports`` and the package schema give them."""
