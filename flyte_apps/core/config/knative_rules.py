"""An app's ``knative`` settings, validated as Knative's own webhook validates the annotations and
fields they become (knative.dev/serving v0.48.2: ``pkg/apis/autoscaling/annotation_validation.go``,
``pkg/apis/serving/v1/revision_validation.go``, ``pkg/apis/serving/metadata_validation.go``), and
the warning a model server needs: a startup probe whose budget outlasts the progress deadline.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from flyte_apps.core import constants as c
from flyte_apps.core.config.models import Autoscaling, KnativeRevision
from flyte_apps.core.durations import NANOS_PER_SECOND, format_duration
from flyte_apps.core.errors import ConfigProblem

WINDOW_MAX_S: Final = 3600
"""Knative's ``WindowMax`` (1h): the bound of the scale-down delay and of the pod retention period."""
CONTAINER_CONCURRENCY_MAX: Final = 1000
"""Knative's default ``container-concurrency-max-limit`` (config-defaults)."""
MIN_ACTIVATION_SCALE: Final = 2
PROBE_PERIOD_DEFAULT_S: Final = 10
PROBE_FAILURE_THRESHOLD_DEFAULT: Final = 3


def _duration(nanos: int) -> str:
    return format_duration(nanos)


def knative_revision_problems(
    knative: KnativeRevision, autoscaling: Autoscaling | None, path: str
) -> list[ConfigProblem]:
    """What Knative's webhook would refuse of ``knative`` (at ``path``), each at its key."""
    found: list[ConfigProblem] = []

    def refuse(key: str, message: str) -> None:
        found.append(ConfigProblem(f"{path}.{key}", message))

    deadline = knative.progress_deadline
    if deadline is not None:
        if deadline < 0:
            refuse("progressDeadline", f"{_duration(deadline)} must not be negative")
        elif deadline % NANOS_PER_SECOND:
            refuse("progressDeadline", f"{_duration(deadline)} is not whole seconds (Knative's precision)")
    delay = knative.scale_down_delay
    if delay is not None:
        if not 0 <= delay <= WINDOW_MAX_S * NANOS_PER_SECOND:
            refuse("scaleDownDelay", f"{_duration(delay)} is outside Knative's range 0s..1h")
        elif delay % NANOS_PER_SECOND:
            refuse("scaleDownDelay", f"{_duration(delay)} is not whole seconds (Knative's precision)")
    retention = knative.scale_to_zero_pod_retention_period
    if retention is not None and not 0 <= retention <= WINDOW_MAX_S * NANOS_PER_SECOND:
        refuse("scaleToZeroPodRetentionPeriod", f"{_duration(retention)} is outside Knative's range 0s..1h")
    if knative.initial_scale is not None and knative.initial_scale < 0:
        refuse("initialScale", f"{knative.initial_scale} must not be negative")
    utilization = knative.target_utilization_percentage
    if utilization is not None and not 1 <= utilization <= 100:
        refuse("targetUtilizationPercentage", f"{_number(utilization)} is outside 1..100")
    burst = knative.target_burst_capacity
    if burst is not None and burst < 0 and burst != -1:
        refuse("targetBurstCapacity", f"{_number(burst)} must be >= 0, or -1 (always through the activator)")
    concurrency = knative.container_concurrency
    if concurrency is not None and not 0 <= concurrency <= CONTAINER_CONCURRENCY_MAX:
        refuse(
            "containerConcurrency",
            f"{concurrency} is outside 0..{CONTAINER_CONCURRENCY_MAX} (Knative's default "
            "container-concurrency-max-limit; 0 is unlimited)",
        )
    activation = knative.activation_scale
    if activation is not None:
        low = (autoscaling.min_replicas if autoscaling is not None else None) or 0
        high = (autoscaling.max_replicas if autoscaling is not None else None) or 0
        if activation < low:
            refuse("activationScale", f"{activation} is below autoscaling.minReplicas {low}")
        elif high and activation > high:
            refuse("activationScale", f"{activation} is above autoscaling.maxReplicas {high}")
        elif activation < MIN_ACTIVATION_SCALE:
            refuse("activationScale", f"{activation} must be at least {MIN_ACTIVATION_SCALE}")
    return found


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def knative_annotations(knative: KnativeRevision | None) -> dict[str, str]:
    """The revision template's annotations for ``knative``, as Knative reads them."""
    if knative is None:
        return {}
    values: dict[str, str | None] = {
        c.ANNOTATION_PROGRESS_DEADLINE: _text_duration(knative.progress_deadline),
        c.ANNOTATION_SCALE_DOWN_DELAY: _text_duration(knative.scale_down_delay),
        c.ANNOTATION_POD_RETENTION: _text_duration(knative.scale_to_zero_pod_retention_period),
        c.ANNOTATION_INITIAL_SCALE: None if knative.initial_scale is None else str(knative.initial_scale),
        c.ANNOTATION_TARGET_UTILIZATION: _text_number(knative.target_utilization_percentage),
        c.ANNOTATION_TARGET_BURST_CAPACITY: _text_number(knative.target_burst_capacity),
        c.ANNOTATION_ACTIVATION_SCALE: None
        if knative.activation_scale is None
        else str(knative.activation_scale),
    }
    return {key: value for key, value in values.items() if value is not None}


def _text_duration(nanos: int | None) -> str | None:
    return None if nanos is None else format_duration(nanos)


def _text_number(value: float | None) -> str | None:
    return None if value is None else _number(value)


def startup_budget_seconds(probe: Mapping[str, Any]) -> int | None:
    """How long a startup probe lets a container start: ``initialDelaySeconds + periodSeconds x
    failureThreshold`` (Kubernetes' defaults 0, 10 and 3), or None for a probe of the wrong shape."""
    values = [probe.get(key) for key in ("initialDelaySeconds", "periodSeconds", "failureThreshold")]
    if not all(value is None or (isinstance(value, int) and not isinstance(value, bool)) for value in values):
        return None
    delay, period, threshold = values
    return int(delay or 0) + int(period or PROBE_PERIOD_DEFAULT_S) * int(
        threshold or PROBE_FAILURE_THRESHOLD_DEFAULT
    )


def startup_probe_warnings(
    pod_spec: Mapping[str, Any], knative: KnativeRevision | None, path: str
) -> list[str]:
    """A startup probe that may take longer than the revision's progress deadline: Knative fails the
    revision first."""
    deadline_nanos = knative.progress_deadline if knative is not None else None
    deadline = (
        deadline_nanos // NANOS_PER_SECOND
        if deadline_nanos is not None
        else c.KNATIVE_PROGRESS_DEADLINE_DEFAULT_S
    )
    if deadline == 0:
        return []
    found: list[str] = []
    containers = pod_spec.get("containers")
    for index, container in enumerate(containers if isinstance(containers, list) else []):
        probe = container.get("startupProbe") if isinstance(container, Mapping) else None
        budget = startup_budget_seconds(probe) if isinstance(probe, Mapping) else None
        if budget is not None and budget > deadline:
            source = "knative.progressDeadline" if deadline_nanos is not None else "Knative's default"
            found.append(
                f"{path}: container {index}'s startup probe allows {budget}s to start (initialDelaySeconds "
                f"+ periodSeconds x failureThreshold), more than the progress deadline {deadline}s "
                f"({source}): Knative fails the revision first; raise {path}.knative.progressDeadline"
            )
    return found


KNOB_ANNOTATIONS: Final = {
    "progressDeadline": c.ANNOTATION_PROGRESS_DEADLINE,
    "scaleDownDelay": c.ANNOTATION_SCALE_DOWN_DELAY,
    "scaleToZeroPodRetentionPeriod": c.ANNOTATION_POD_RETENTION,
    "initialScale": c.ANNOTATION_INITIAL_SCALE,
    "targetUtilizationPercentage": c.ANNOTATION_TARGET_UTILIZATION,
    "targetBurstCapacity": c.ANNOTATION_TARGET_BURST_CAPACITY,
    "activationScale": c.ANNOTATION_ACTIVATION_SCALE,
}
"""The ``knative`` keys that are revision-template annotations, and those annotations."""
_WHOLE_KNOBS: Final = frozenset({"initialScale", "activationScale"})
_NUMBER_KNOBS: Final = frozenset({"targetUtilizationPercentage", "targetBurstCapacity"})


def knobs_from_template(template: Mapping[str, Any], *, stopped: bool) -> dict[str, Any]:
    """The ``knative`` entry that renders a live revision template's knobs again (``flyte-apps
    import``): each annotation as the stack file writes it, ``containerConcurrency`` from the spec. A
    stopped app's ``initial-scale`` is upstream's stop form, not a knob. A value that is not a number
    where one belongs is kept as text, for the config checks to refuse with its key."""
    metadata = template.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    found: dict[str, Any] = {}
    for key, annotation in KNOB_ANNOTATIONS.items():
        value = annotations.get(annotation) if isinstance(annotations, Mapping) else None
        if not isinstance(value, str) or (stopped and annotation == c.ANNOTATION_INITIAL_SCALE):
            continue
        found[key] = (
            _number_of(value, whole=key in _WHOLE_KNOBS) if key in _WHOLE_KNOBS | _NUMBER_KNOBS else value
        )
    spec = template.get("spec")
    concurrency = spec.get(c.FIELD_CONTAINER_CONCURRENCY) if isinstance(spec, Mapping) else None
    if isinstance(concurrency, int) and not isinstance(concurrency, bool):
        found["containerConcurrency"] = concurrency
    return found


def _number_of(text: str, *, whole: bool) -> int | float | str:
    try:
        return int(text) if whole else (int(text) if text.lstrip("-").isdigit() else float(text))
    except ValueError:
        return text
