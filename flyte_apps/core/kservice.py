"""Pure: an app and the platform settings -> the KService manifest Flyte's app service would create
(reference (c)4-5), plus upstream's stop patch when the app is stopped (reference (c)7).

Beyond upstream: GPUs, accelerators and shared memory become the pod settings Flyte's Kubernetes
plugin gives task pods (``gpus``, ``shared_memory``), and with ``platform.applyPodMetadata`` a pod
template's labels and annotations go on the revision template (upstream ignores them, (j)10)."""

from __future__ import annotations

from flyte_apps.core import constants as c
from flyte_apps.core.config.accelerators import gpu_resource_name
from flyte_apps.core.config.knative_rules import knative_annotations
from flyte_apps.core.config.models import AppConfig, PlatformConfig, PodMetadata
from flyte_apps.core.durations import NANOS_PER_SECOND, format_duration
from flyte_apps.core.gpus import place_on_accelerator, set_gpu_counts
from flyte_apps.core.naming import endpoint_pattern, kservice_name
from flyte_apps.core.objects import Manifest
from flyte_apps.core.placement import (
    add_extended_resource_tolerations,
    add_platform_tolerations,
    apply_platform_scheduling,
)
from flyte_apps.core.pod_quantities import canonical_pod_quantities
from flyte_apps.core.secrets import encode_secret
from flyte_apps.core.shared_memory import mount_shared_memory
from flyte_apps.core.spec import SpecBlob, build_secrets


def build_kservice(app: AppConfig, platform: PlatformConfig, blob: SpecBlob) -> Manifest:
    """The KService for ``app``: the running form, with upstream's stop patch merged in if stopped."""
    settings = platform.settings
    ident = app.id
    labels = {
        c.LABEL_APP_MANAGED: c.TRUE,
        c.LABEL_PROJECT: ident.project,
        c.LABEL_DOMAIN: ident.domain,
        c.LABEL_APP_NAME: ident.name,
    }
    if not app.public or app.input.stopped:
        labels[c.LABEL_VISIBILITY] = c.VISIBILITY_CLUSTER_LOCAL
    if app.input.stopped:
        labels[c.LABEL_APP_STOPPED] = c.TRUE
    template_annotations = autoscaling_annotations(app)
    template_annotations.update(knative_annotations(app.input.knative))
    if app.input.stopped:  # upstream's stop form wins over a running app's initial scale
        template_annotations[c.ANNOTATION_MIN_SCALE] = "0"
        template_annotations[c.ANNOTATION_INITIAL_SCALE] = "0"
    template_metadata: Manifest = {}
    template_labels: dict[str, str] = {}
    if app.input.secrets:
        # Only with secrets: the labels select the pod for Flyte's secret-injecting webhook.
        template_labels = {
            c.SECRET_LABEL_ORGANIZATION: c.SECRET_ORGANIZATION,
            c.SECRET_LABEL_PROJECT: ident.project,
            c.SECRET_LABEL_DOMAIN: ident.domain,
            c.SECRET_LABEL_INJECT: c.TRUE,
        }
        template_annotations.update(secret_annotations(app))
    pod_metadata = applied_pod_metadata(app, platform)
    if pod_metadata is not None:  # its keys never clash with the ones above (a config rule)
        template_labels.update(pod_metadata.labels)
        template_annotations.update(pod_metadata.annotations)
    if template_labels:
        template_metadata["labels"] = template_labels
    if template_annotations:
        template_metadata["annotations"] = template_annotations
    pod_spec = build_pod_spec(app, platform)
    pod_spec["timeoutSeconds"] = request_timeout_seconds(app, platform)
    knative = app.input.knative
    if knative is not None and knative.container_concurrency is not None:
        pod_spec[c.FIELD_CONTAINER_CONCURRENCY] = knative.container_concurrency
    annotations = {
        c.ANNOTATION_SPEC_SHA: blob.sha,
        c.ANNOTATION_APP_ID: str(ident),
        c.ANNOTATION_APP_ORG: ident.org,
        c.ANNOTATION_SPEC: blob.b64,
        # The stack is the source of truth for the fields it renders: pulumi-kubernetes then forces its
        # server-side apply, taking those fields over from whoever set them last instead of failing
        # with a field conflict. A hand edit (`kubectl patch`/`edit`), Flyte's app service rebuilding
        # the KService, or the creator of an adopted one owns the revision template's containers (an
        # atomic list) otherwise, and `pulumi up --refresh` could not put the stack's version back.
        # Only what we apply is taken: fields we do not render keep their owners and values. The
        # annotation stays on the live object (pulumi-kubernetes reads it from the inputs). Found by
        # the real engine (tests/e2e).
        c.ANNOTATION_PATCH_FORCE: c.TRUE,
    }
    return {
        "apiVersion": c.KNATIVE_API_VERSION,
        "kind": c.KSERVICE_KIND,
        "metadata": {
            "name": kservice_name(project=ident.project, domain=ident.domain, name=ident.name),
            "namespace": settings.namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {"template": {"metadata": template_metadata, "spec": pod_spec}},
    }


def build_pod_spec(app: AppConfig, platform: PlatformConfig) -> Manifest:
    """The payload's pod spec (``AppConfig.pod_spec``, left unchanged) plus what Flyte adds: upstream's
    ``enableServiceLinks: false`` unless the pod template sets it, the service-account rule (the app's,
    else the platform default, else the pod template's), env = platform defaults, the container's own,
    then Flyte's three variables in ``containers[0]``; then GPUs, accelerator placement and shared
    memory as Flyte's Kubernetes plugin adds them; every quantity as Kubernetes writes it back (as
    upstream's typed Go does: ``1024Mi`` is ``1Gi``)."""
    settings = platform.settings
    pod: Manifest = dict(app.pod_spec)
    pod.setdefault("enableServiceLinks", False)
    account = app.input.service_account or settings.default_service_account
    if account:
        pod["serviceAccountName"] = account
    containers = list(pod.get("containers") or [])
    if containers:
        first = dict(containers[0])
        first["env"] = [
            *({"name": var.name, "value": var.value} for var in platform.default_env),
            *(first.get("env") or []),
            {
                "name": c.ENV_ENDPOINT_PATTERN,
                "value": endpoint_pattern(
                    settings.namespaced_name_suffix_template,
                    project=app.id.project,
                    domain=app.id.domain,
                    namespace=settings.namespace,
                ),
            },
            {"name": c.ENV_EXECUTION_PROJECT, "value": app.id.project},
            {"name": c.ENV_EXECUTION_DOMAIN, "value": app.id.domain},
        ]
        pod["containers"] = [first, *containers[1:]]
    set_gpu_counts(pod, gpu_resource_name(app.input.accelerator, settings))
    add_platform_tolerations(pod, settings)
    apply_platform_scheduling(pod, settings)
    place_on_accelerator(pod, app.input.accelerator, settings)
    mount_shared_memory(pod, app.input.shared_memory, app.primary_container)
    add_extended_resource_tolerations(pod, settings)
    return canonical_pod_quantities(pod)


def applied_pod_metadata(app: AppConfig, platform: PlatformConfig) -> PodMetadata | None:
    """The pod template's metadata, when the platform puts it on revision templates."""
    pod = app.input.pod
    if pod is None or pod.metadata is None or not platform.settings.apply_pod_metadata:
        return None
    return pod.metadata


def secret_annotations(app: AppConfig) -> dict[str, str]:
    """``flyte.secrets/s{i}`` for each secret of the app's spec, in order."""
    return {
        f"{c.ANNOTATION_SECRET_PREFIX}{index}": encode_secret(secret)
        for index, secret in enumerate(build_secrets(app))
    }


def autoscaling_annotations(app: AppConfig) -> dict[str, str]:
    """Knative autoscaling annotations; ``max-scale: "0"`` is Knative's "unbounded"."""
    scaling = app.input.autoscaling
    annotations: dict[str, str] = {}
    if scaling is None:
        return annotations
    if scaling.min_replicas is not None or scaling.max_replicas is not None:
        annotations[c.ANNOTATION_MIN_SCALE] = str(scaling.min_replicas or 0)
        annotations[c.ANNOTATION_MAX_SCALE] = str(scaling.max_replicas or 0)
    if scaling.metric is not None and scaling.target is not None:
        annotations[c.ANNOTATION_METRIC] = c.METRIC_RPS if scaling.metric == "rps" else c.METRIC_CONCURRENCY
        annotations[c.ANNOTATION_TARGET] = str(scaling.target)
    if scaling.scaledown_period is not None:
        annotations[c.ANNOTATION_WINDOW] = format_duration(scaling.scaledown_period)
    return annotations


def request_timeout_seconds(app: AppConfig, platform: PlatformConfig) -> int:
    """The app's request timeout, else the platform default, truncated to whole seconds as upstream."""
    timeouts = app.input.timeouts
    nanos = platform.settings.default_request_timeout
    if timeouts is not None and timeouts.request is not None:
        nanos = timeouts.request
    return nanos // NANOS_PER_SECOND
