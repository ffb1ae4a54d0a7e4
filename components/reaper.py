"""``RevisionReaper``: the imperative half of stopping an app, as a Pulumi dynamic resource.

Stopping is declarative (the stopped KService form), but the revision that still holds pods keeps
them until Knative's stable window ends. While an app is stopped, ``FlyteApp`` adds this resource
after the KService; its create/update waits for Knative to make the stop revision ready and then
deletes the older revisions that still have pods (``flyte_apps.kube.reaper``), without upstream's
race of deleting the stop revision itself.

Provider hygiene (DESIGN decision 5): the SDK pickles the provider object into the stack's state,
so it holds plain data only; the Kubernetes client is built inside each call from the stack's
``kubernetes:kubeconfig``/``kubernetes:context`` (received by ``configure``, never pickled);
``check`` and ``diff`` never call the cluster (they run during preview).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import pulumi
from pulumi.dynamic import (
    CheckResult,
    ConfigureRequest,
    CreateResult,
    DiffResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)

from flyte_apps.core.constants import CONFIG_KUBE_CONTEXT, CONFIG_KUBECONFIG

if TYPE_CHECKING:
    from flyte_apps.kube.reaper import ReapResult
    from flyte_apps.kube.target import KubeTarget

# Property names double as the resource's attribute names, hence snake_case.
INPUT_NAMESPACE: Final = "namespace"
INPUT_KSERVICE: Final = "kservice_name"
INPUT_SPEC_SHA: Final = "spec_sha"
INPUT_TIMEOUT: Final = "timeout_seconds"
INPUT_KEYS: Final = (INPUT_NAMESPACE, INPUT_KSERVICE, INPUT_SPEC_SHA, INPUT_TIMEOUT)
REPLACE_KEYS: Final = (INPUT_NAMESPACE, INPUT_KSERVICE)
"""A different KService is a different reaper."""
OUTPUT_DELETED: Final = "deleted_revisions"
OUTPUT_STOP_REVISION: Final = "stop_revision"


class RevisionReaperProvider(ResourceProvider):
    """Deletes the old revisions of a stopped app's KService once the stop revision is ready."""

    def __init__(self) -> None:
        super().__init__()
        self._stack_target: KubeTarget | None = None

    def __getstate__(self) -> dict[str, Any]:
        # The stack's kubeconfig may hold a token: never let it into the pickled provider.
        return {}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        del state
        self._stack_target = None

    def configure(self, req: ConfigureRequest) -> None:
        """Remember which cluster the stack's config names (the same keys pulumi-kubernetes reads)."""
        from flyte_apps.kube.target import KubeTarget

        kubeconfig = req.config.get(CONFIG_KUBECONFIG)
        context = req.config.get(CONFIG_KUBE_CONTEXT)
        self._stack_target = KubeTarget(kubeconfig=kubeconfig or None, context=context or None)

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        """Offline: the inputs come from the validated stack config; keep only the known keys."""
        return CheckResult({key: news[key] for key in INPUT_KEYS if key in news}, [])

    def diff(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> DiffResult:
        """Offline: a changed stopped spec means a new stop revision, so the reaper runs again."""
        changed = [key for key in INPUT_KEYS if _olds.get(key) != _news.get(key)]
        return DiffResult(
            changes=bool(changed),
            replaces=[key for key in changed if key in REPLACE_KEYS],
            stables=[],
            delete_before_replace=False,
        )

    def create(self, props: dict[str, Any]) -> CreateResult:
        result = self._reap(props)
        return CreateResult(
            id_=f"{props[INPUT_NAMESPACE]}/{props[INPUT_KSERVICE]}", outs=_outs(props, result)
        )

    def update(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=_outs(_news, self._reap(_news)))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing to undo: starting the app again is the KService update itself."""

    def _reap(self, props: Mapping[str, Any]) -> ReapResult:
        # The Kubernetes client is imported here, in the provider's process, not by every
        # `pulumi up` that only registers reapers (it is a large import).
        from flyte_apps.kube.reaper import reap_stopped_revisions
        from flyte_apps.kube.target import build_api_client

        api = build_api_client(stack=self._stack_target)
        try:
            return reap_stopped_revisions(
                api,
                namespace=str(props[INPUT_NAMESPACE]),
                kservice=str(props[INPUT_KSERVICE]),
                timeout_seconds=float(props[INPUT_TIMEOUT]),
            )
        finally:
            api.close()  # type: ignore[no-untyped-call]


def _outs(props: Mapping[str, Any], result: ReapResult) -> dict[str, Any]:
    return {
        **{key: props[key] for key in INPUT_KEYS},
        OUTPUT_DELETED: list(result.deleted),
        OUTPUT_STOP_REVISION: result.stop_revision or "",
    }


@dataclass(frozen=True)
class RevisionReaperArgs:
    """Inputs of a ``RevisionReaper`` (all plain values: they are stored in state)."""

    namespace: str
    kservice_name: str
    spec_sha: str
    """The stopped app's spec sha: a new sha means a new stop revision to wait for."""
    timeout_seconds: float
    """``platform.reaperTimeout``: how long to wait for Knative before failing."""


class RevisionReaper(Resource, module="flyte", name="RevisionReaper"):
    """Type ``pulumi-python:dynamic/flyte:RevisionReaper`` (never rename: it is in every URN)."""

    deleted_revisions: pulumi.Output[list[str]]
    stop_revision: pulumi.Output[str]

    def __init__(
        self, name: str, args: RevisionReaperArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(
            RevisionReaperProvider(),
            name,
            {
                INPUT_NAMESPACE: args.namespace,
                INPUT_KSERVICE: args.kservice_name,
                INPUT_SPEC_SHA: args.spec_sha,
                INPUT_TIMEOUT: args.timeout_seconds,
                OUTPUT_DELETED: None,
                OUTPUT_STOP_REVISION: None,
            },
            opts,
        )
