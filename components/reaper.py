"""``RevisionReaper``: the imperative half of stopping an app, as a Pulumi dynamic resource.

Stopping is declarative (the stopped KService form), but the revision that still holds pods keeps
them until Knative's stable window ends. While an app is stopped, ``FlyteApp`` adds this resource
after the KService; its create/update waits for Knative to make the stop revision ready and then
deletes the older revisions that still have pods (``flyte_apps.kube.reaper``), without upstream's
race of deleting the stop revision itself.

Provider hygiene (DESIGN decision 5): the SDK pickles the provider object into the stack's state,
so it holds plain data only; the Kubernetes client is built inside each call from the stack's
``kubernetes:kubeconfig``/``kubernetes:context`` (never pickled); ``check`` and ``diff`` never call
the cluster (they run during preview).

Which cluster, in the SDK's real provider host (``python -m pulumi.dynamic``, a process of its own):

- The stack's settings win over the environment however the engine passes them. The host hands
  ``configure`` only the ConfigureRequest's ``args``; an engine that sends the config in ``variables``
  alone leaves it empty, and ``KUBECONFIG`` (another cluster) would win. So the program also records,
  as the ``cluster`` input, what the stack names: the kubeconfig's absolute path and the context, or
  only that the kubeconfig is inline content (a credential: never an input). Content still comes
  from ``configure``; when it does not, the reaper refuses instead of guessing from the environment.
- A relative ``kubernetes:kubeconfig`` is resolved by the program, in its working directory: the
  engine runs the program in the project's directory, and starts pulumi-kubernetes there too, which
  reads the same relative path from it. The ConfigureRequest carries no directory, and the host does
  not implement the provider handshake that would. Without a ``cluster`` input (state from before it
  existed) only what ``configure`` received names the cluster; with neither, the reaper refuses.
  A secret ``cluster`` input (the stack keeps its kubeconfig setting secret) is read through its
  wrapping.
- A failure reaches the engine as one line: the host sends ``traceback.format_exc()`` as the gRPC
  details, so the error is re-raised as one :class:`RevisionReaperError` line with the host's
  traceback limit at 0 (only inside that host).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
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
from flyte_apps.core.errors import FlyteAppsError
from flyte_apps.core.kubeconfig import is_kubeconfig_path
from flyte_apps.core.reaping import ReaperKeys, StopFailed, diff_stop, stop_failure

if TYPE_CHECKING:
    from flyte_apps.kube.reaper import ReapResult
    from flyte_apps.kube.target import KubeTarget

# Property names double as the resource's attribute names, hence snake_case.
INPUT_NAMESPACE: Final = "namespace"
INPUT_KSERVICE: Final = "kservice_name"
INPUT_SPEC_SHA: Final = "spec_sha"
INPUT_TIMEOUT: Final = "timeout_seconds"
KEYS: Final = ReaperKeys(
    namespace=INPUT_NAMESPACE, kservice=INPUT_KSERVICE, spec_sha=INPUT_SPEC_SHA, timeout=INPUT_TIMEOUT
)
"""This reaper's names for the inputs of the core both reapers adapt (``flyte_apps.core.reaping``)."""
INPUT_KEYS: Final = KEYS.compared
INPUT_CLUSTER: Final = "cluster"
"""Which cluster the stack names (``stack_cluster``). Not in ``INPUT_KEYS``: ``diff`` ignores it, so a
project checked out at another path, or a rotated kubeconfig, does not make the reaper run again."""
CLUSTER_KUBECONFIG: Final = "kubeconfig"
"""The stack's kubeconfig file, absolute; empty when the stack names none or gives content."""
CLUSTER_INLINE: Final = "kubeconfig_inline"
"""True when the stack's kubeconfig is content: ``configure`` must hand it over."""
CLUSTER_CONTEXT: Final = "context"
OUTPUT_DELETED: Final = "deleted_revisions"
OUTPUT_STOP_REVISION: Final = "stop_revision"
OLD_CONFIG_SPELLING: Final = ":config:"
"""``kubernetes:config:kubeconfig``: how engines spelled a config key to providers before ``args``."""
SDK_PROVIDER_HOST: Final = "pulumi.dynamic.__main__"
"""The module the engine runs as ``__main__`` in the dynamic-provider host process."""


class RevisionReaperError(FlyteAppsError):
    """A reaper failure, phrased as the one line the engine shows (``pulumi up``'s error)."""


@dataclass(frozen=True)
class ConfiguredCluster:
    """What ``configure`` was handed: the stack's ``kubernetes:kubeconfig`` (a path or the content) and
    ``kubernetes:context``, ``None`` where unset."""

    kubeconfig: str | None
    context: str | None


class RevisionReaperProvider(ResourceProvider):
    """Deletes the old revisions of a stopped app's KService once the stop revision is ready."""

    def __init__(self) -> None:
        super().__init__()
        self._stack_target: ConfiguredCluster | None = None

    def __getstate__(self) -> dict[str, Any]:
        # The stack's kubeconfig may hold a token: never let it into the pickled provider.
        return {}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        del state
        self._stack_target = None

    def configure(self, req: ConfigureRequest) -> None:
        """Remember which cluster the stack's config names (the same keys pulumi-kubernetes reads,
        in either spelling an engine may use). Plain strings: the host configures the provider before
        every preview's first ``check``, and the Kubernetes client is imported only by a call that
        reaches the cluster."""
        self._stack_target = ConfiguredCluster(
            kubeconfig=_config_value(req, CONFIG_KUBECONFIG), context=_config_value(req, CONFIG_KUBE_CONTEXT)
        )

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        """Offline: the inputs come from the validated stack config; keep only the known keys."""
        return CheckResult({key: news[key] for key in (*INPUT_KEYS, INPUT_CLUSTER) if key in news}, [])

    def diff(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> DiffResult:
        """Offline: a changed stopped spec means a new stop revision, so the reaper runs again."""
        diff = diff_stop(KEYS, _olds, _news)
        return DiffResult(
            changes=bool(diff.changed), replaces=list(diff.replaces), stables=[], delete_before_replace=False
        )

    def create(self, props: dict[str, Any]) -> CreateResult:
        with _one_line_errors(props):
            result = self._reap(props)
        return CreateResult(
            id_=f"{props[INPUT_NAMESPACE]}/{props[INPUT_KSERVICE]}", outs=_outs(props, result)
        )

    def update(self, _id: str, _olds: dict[str, Any], _news: dict[str, Any]) -> UpdateResult:
        with _one_line_errors(_news):
            result = self._reap(_news)
        return UpdateResult(outs=_outs(_news, result))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing to undo: starting the app again is the KService update itself."""

    def _reap(self, props: Mapping[str, Any]) -> ReapResult:
        # The Kubernetes client is imported here, in the provider's process, not by every
        # `pulumi up` that only registers reapers (it is a large import).
        from flyte_apps.kube.reaper import stop

        return stop(self._target(props.get(INPUT_CLUSTER)), KEYS.inputs(props))

    def _target(self, declared: object) -> KubeTarget:
        """The stack's cluster: what the program recorded wins over what ``configure`` received,
        which may be nothing (an engine that passed the config only in ``variables``)."""
        from pulumi.runtime.rpc import unwrap_rpc_secret

        from flyte_apps.kube.target import KubeTarget

        stack = self._stack_target
        configured = None if stack is None else KubeTarget(kubeconfig=stack.kubeconfig, context=stack.context)
        # A stack that keeps its kubeconfig setting secret makes the whole input a secret, which the
        # SDK's host hands over wrapped: read through the wrapping, never past it to KUBECONFIG.
        declared = unwrap_rpc_secret(declared)
        if not isinstance(declared, Mapping):
            # No record of the stack's cluster (state from before the input existed): only what
            # ``configure`` was given says which cluster the stack names.
            if configured is not None and (configured.kubeconfig or configured.context):
                return configured
            msg = (
                "cannot tell which cluster the stack names (no record of it in this reaper's inputs, "
                "none handed to the dynamic-provider host); not falling back to KUBECONFIG, which may "
                "name another cluster. Run pulumi up again with this version, which records it"
            )
            raise RevisionReaperError(msg)
        context = str(unwrap_rpc_secret(declared.get(CLUSTER_CONTEXT)) or "") or None
        path = str(unwrap_rpc_secret(declared.get(CLUSTER_KUBECONFIG)) or "")
        if path:
            return KubeTarget(kubeconfig=path, context=context)
        if not unwrap_rpc_secret(declared.get(CLUSTER_INLINE)):
            # The stack names no kubeconfig: KUBECONFIG, ~/.kube/config, in-cluster, as pulumi-kubernetes.
            return KubeTarget(kubeconfig=None, context=context)
        if configured is not None and configured.kubeconfig and configured.kubeconfig_is_content:
            return KubeTarget(kubeconfig=configured.kubeconfig, context=context)
        msg = (
            f"the stack sets {CONFIG_KUBECONFIG} to kubeconfig content, but the Pulumi engine did not "
            "hand it to the dynamic-provider host (it passed the stack config only in the "
            "ConfigureRequest's variables, which the Python SDK's host ignores); not falling back to "
            "KUBECONFIG, which may name another cluster. Set kubernetes:kubeconfig to a file path, or "
            "use a Pulumi CLI that passes provider config as args"
        )
        raise RevisionReaperError(msg)


def stack_cluster(kubeconfig: str | None, context: str | None, working_directory: Path) -> dict[str, Any]:
    """The ``cluster`` input: the stack's kubeconfig as an absolute path (a relative one is taken
    from ``working_directory``, the program's, as pulumi-kubernetes takes it) and context; for inline
    content only the fact that there is some (the content may hold a token)."""
    path = ""
    if kubeconfig:

        def beside(value: str) -> Path:
            given = Path(value).expanduser()
            return given if given.is_absolute() else working_directory / given

        if is_kubeconfig_path(kubeconfig, is_file=lambda value: beside(value).is_file()):
            path = str(beside(kubeconfig))
    # Not an existing file: content (pulumi-kubernetes' rule), so never recorded in the state.
    inline = bool(kubeconfig) and not path
    return {CLUSTER_KUBECONFIG: path, CLUSTER_INLINE: inline, CLUSTER_CONTEXT: context or ""}


def _config_value(req: ConfigureRequest, key: str) -> str | None:
    """``kubernetes:kubeconfig`` as the engine's ``args`` spell it, else the older
    ``kubernetes:config:kubeconfig`` spelling."""
    namespace, _, name = key.partition(":")
    value = req.config.get(key) or req.config.get(f"{namespace}{OLD_CONFIG_SPELLING}{name}")
    return str(value) if value else None


@contextmanager
def _one_line_errors(props: Mapping[str, Any]) -> Iterator[None]:
    """Turn any failure into one :class:`RevisionReaperError` line naming the KService.

    The SDK's host reports an exception to the engine as ``traceback.format_exc()`` (16 lines for a
    Knative timeout), and the engine prints that as the error. A traceback limit of 0 makes it the
    exception's line alone; it is set only in that host process (the engine starts one per
    ``pulumi up`` for dynamic providers), never in a program or a test run."""
    try:
        yield
    except Exception as exc:
        line = str(exc if isinstance(exc, StopFailed) else stop_failure(KEYS.where(props), exc))
        if _in_sdk_provider_host():
            sys.tracebacklimit = 0
        raise RevisionReaperError(line) from None


def _in_sdk_provider_host() -> bool:
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    return getattr(spec, "name", None) == SDK_PROVIDER_HOST


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
    cluster: pulumi.Input[dict[str, Any]]
    """Which cluster the stack names (``stack_cluster``), secret when the stack keeps it secret."""


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
                INPUT_CLUSTER: args.cluster,
                OUTPUT_DELETED: None,
                OUTPUT_STOP_REVISION: None,
            },
            opts,
        )
