"""Pure: an app and the platform settings -> the KService manifest Flyte's app service would create
(reference (c)4-5), plus upstream's stop patch when the app is stopped (reference (c)7)."""

from __future__ import annotations

from flyte_apps.core import constants as c
from flyte_apps.core.config.models import AppConfig, PlatformConfig
from flyte_apps.core.durations import NANOS_PER_SECOND, format_duration
from flyte_apps.core.naming import endpoint_pattern, kservice_name
from flyte_apps.core.objects import Manifest
from flyte_apps.core.secrets import encode_secret
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
    if app.input.stopped:
        template_annotations[c.ANNOTATION_MIN_SCALE] = "0"
        template_annotations[c.ANNOTATION_INITIAL_SCALE] = "0"
    template_metadata: Manifest = {}
    if app.input.secrets:
        # Only with secrets: the labels select the pod for Flyte's secret-injecting webhook.
        template_metadata["labels"] = {
            c.SECRET_LABEL_ORGANIZATION: c.SECRET_ORGANIZATION,
            c.SECRET_LABEL_PROJECT: ident.project,
            c.SECRET_LABEL_DOMAIN: ident.domain,
            c.SECRET_LABEL_INJECT: c.TRUE,
        }
        template_annotations.update(secret_annotations(app))
    if template_annotations:
        template_metadata["annotations"] = template_annotations
    pod_spec = build_pod_spec(app, platform)
    pod_spec["timeoutSeconds"] = request_timeout_seconds(app, platform)
    return {
        "apiVersion": c.KNATIVE_API_VERSION,
        "kind": c.KSERVICE_KIND,
        "metadata": {
            "name": kservice_name(project=ident.project, domain=ident.domain, name=ident.name),
            "namespace": settings.namespace,
            "labels": labels,
            "annotations": {
                c.ANNOTATION_SPEC_SHA: blob.sha,
                c.ANNOTATION_APP_ID: str(ident),
                c.ANNOTATION_APP_ORG: ident.org,
                c.ANNOTATION_SPEC: blob.b64,
            },
        },
        "spec": {"template": {"metadata": template_metadata, "spec": pod_spec}},
    }


def build_pod_spec(app: AppConfig, platform: PlatformConfig) -> Manifest:
    """One container named ``app``; env = platform defaults, the app's env, then Flyte's three vars."""
    settings = platform.settings
    given = app.input.container
    container: Manifest = {"name": c.USER_CONTAINER_NAME, "image": given.image}
    if given.command:
        container["command"] = list(given.command)
    if given.args:
        container["args"] = list(given.args)
    if given.ports:
        container["ports"] = [
            {"containerPort": port.container_port, **({"name": port.name} if port.name else {})}
            for port in given.ports
        ]
    env = [*platform.default_env, *app.env]
    container["env"] = [{"name": var.name, "value": var.value} for var in env] + [
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
    resources = given.resources
    if resources is not None and (resources.requests or resources.limits):
        container["resources"] = {
            key: {name: entries[name] for name in sorted(entries)}
            for key, entries in (("requests", resources.requests), ("limits", resources.limits))
            if entries
        }
    pod: Manifest = {"containers": [container], "enableServiceLinks": False}
    account = app.input.service_account or settings.default_service_account
    if account:
        pod["serviceAccountName"] = account
    return pod


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
