"""What the commands share: their common options (each one's name, help text and default written
once, here), the output formats, where the cluster is, which platform settings apply, which app a NAME
means, and how domain errors become exit codes (and nothing else does)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, NoReturn, TypeVar

import typer

# Re-exported: the exit codes and stdout helpers live in exits (standard library only).
from flyte_apps.cli.exits import EXIT_CLUSTER as EXIT_CLUSTER
from flyte_apps.cli.exits import EXIT_DRIFT as EXIT_DRIFT
from flyte_apps.cli.exits import EXIT_INTERRUPTED as EXIT_INTERRUPTED
from flyte_apps.cli.exits import EXIT_NOT_FOUND as EXIT_NOT_FOUND
from flyte_apps.cli.exits import EXIT_OK as EXIT_OK
from flyte_apps.cli.exits import EXIT_USAGE as EXIT_USAGE
from flyte_apps.cli.exits import silence_stdout as silence_stdout
from flyte_apps.cli.exits import silence_stdout_if_reader_gone as silence_stdout_if_reader_gone
from flyte_apps.cli.exits import stdout_reader_gone as stdout_reader_gone
from flyte_apps.cli.exits import stop_if_reader_gone as stop_if_reader_gone
from flyte_apps.core import constants as c
from flyte_apps.core.credentials import redact
from flyte_apps.core.errors import ConfigError, FlyteAppsError
from flyte_apps.core.printable import printable
from flyte_apps.kube.errors import KubeConfigError, KubeError, KubeNotFound

if TYPE_CHECKING:
    # The Kubernetes client, the planner and the models are imported where used, not here: every
    # command imports this module, and `render --help` should not pay for them (bench/startup.py).
    from kubernetes import client as k8s

    from flyte_apps.core.config.models import AppId, PlatformConfig
    from flyte_apps.core.plan import StackPlan
    from flyte_apps.kube.retry import RetryPolicy
    from flyte_apps.kube.target import KubeTarget

T = TypeVar("T")


class OutputFormat(StrEnum):
    """Every value of an ``--output``/``-o`` option. A command takes some of them: its option's type is
    a ``Literal`` of these members, which typer offers as the choices (see :func:`output_option`)."""

    TEXT = "text"
    TABLE = "table"
    WIDE = "wide"
    JSON = "json"
    YAML = "yaml"
    SARIF = "sarif"
    GITHUB = "github"


def output_option(help_text: str, *, case_sensitive: bool = True) -> Any:
    """A command's ``--output``/``-o`` option (for ``Annotated[Literal[OutputFormat.X, ...], ...]``):
    ``help_text`` says what each choice prints; ``case_sensitive=False`` also takes ``-o JSON``."""
    return typer.Option("--output", "-o", help=help_text, case_sensitive=case_sensitive)


# The options below are annotated types for a command's parameters; a parameter's default goes after
# `=` (typer takes it from there), and is the constant beside its option where it is not None.
StackOption = Annotated[
    str | None,
    typer.Option(
        "--stack", "-s", help="Stack name: reads Pulumi.yaml, then Pulumi.<STACK>.yaml. Default: dev."
    ),
]
LiveStackOption = Annotated[
    str | None,
    typer.Option(
        "--stack",
        "-s",
        help="Stack name: reads Pulumi.yaml, then Pulumi.<STACK>.yaml (default: no stack is read).",
    ),
]
"""``--stack`` of the cluster-facing commands, which read no stack file unless given one."""
TargetStackOption = Annotated[
    str | None,
    typer.Option(
        "--stack",
        "-s",
        help="Stack name: writes into Pulumi.<STACK>.yaml (after Pulumi.yaml); give --stack or --config.",
    ),
]
"""``--stack`` of ``import``, which needs a stack file to write into and has no default."""
ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="A Pulumi.<stack>.yaml-shaped file to read instead of --stack."),
]
ProjectDirOption = Annotated[
    Path, typer.Option("--project-dir", help="Directory holding Pulumi.yaml and the stack files.")
]
DEFAULT_PROJECT_DIR: Final = Path()
"""``--project-dir``'s default: the working directory (shown as ``.``)."""
KubeconfigOption = Annotated[
    str | None,
    typer.Option(
        "--kubeconfig",
        help="Kubeconfig path (default: the stack's kubernetes:kubeconfig, KUBECONFIG, ~/.kube/config).",
    ),
]
REQUEST_TIMEOUT_FLAG: Final = "--request-timeout"
DEFAULT_REQUEST_TIMEOUT: Final = "30s"
"""``--request-timeout``'s default, as kubectl spells it (``kube.retry.DEFAULT_CALL_TIMEOUT``)."""
RequestTimeoutOption = Annotated[
    str,
    typer.Option(
        REQUEST_TIMEOUT_FLAG,
        metavar="DURATION",
        help="How long one call to the cluster may take, retries included: seconds or a Go duration "
        "(30s, 1m); 0: no limit. As kubectl's flag.",
    ),
]
ContextOption = Annotated[str | None, typer.Option("--context", help="Kubeconfig context to use.")]
NamespaceOption = Annotated[
    str | None,
    typer.Option("--namespace", "-n", help="Namespace of the apps (default: the stack's, else flyte)."),
]
BaseDomainOption = Annotated[
    str | None,
    typer.Option("--base-domain", help="Base domain of public URLs (default: the stack's, else none)."),
]
ProjectOption = Annotated[str | None, typer.Option("--project", "-p", help="Flyte project of the app.")]
DomainOption = Annotated[str | None, typer.Option("--domain", "-d", help="Flyte domain of the app.")]
AppsArgument = Annotated[str | None, typer.Argument(metavar="NAME", help="App name (default: every app).")]


@dataclass(frozen=True)
class ClusterView:
    """Everything a day-2 command needs: platform settings, stack defaults, a client factory."""

    platform: PlatformConfig
    default_project: str | None
    default_domain: str | None
    plan: StackPlan | None
    target: KubeTarget
    stack_target: KubeTarget
    request_timeout: float | None
    """Seconds a call to the cluster may take, retries included (``--request-timeout``; None: 0)."""

    def client(self) -> k8s.ApiClient:
        """A new API client (explicit flags, then the stack's kubernetes:* config, env, home, in-cluster)."""
        from flyte_apps.kube.target import build_api_client

        return build_api_client(self.target, stack=self.stack_target)

    @property
    def namespace(self) -> str:
        return self.platform.settings.namespace

    def retry(self, base: RetryPolicy | None = None) -> RetryPolicy:
        """``base`` (default: the kube layer's) bounded by ``--request-timeout``."""
        from dataclasses import replace

        from flyte_apps.kube.retry import DEFAULT_RETRY

        return replace(
            base or DEFAULT_RETRY, timeout=self.request_timeout, timeout_source=REQUEST_TIMEOUT_FLAG
        )


def parse_request_timeout(text: str) -> float | None:
    """``--request-timeout`` as kubectl reads it: a whole number of seconds or a Go duration
    (``30s``, ``1m``, ``1.5s``); 0 means no limit (None). Anything else is a usage error."""
    from flyte_apps.core.bounds import shown
    from flyte_apps.core.durations import NANOS_PER_SECOND, DurationSyntaxError, parse_duration

    nanos: int | None = None
    stripped = text.strip()
    if stripped.isascii() and stripped.isdigit() and len(stripped) <= _MAX_TIMEOUT_DIGITS:
        nanos = int(stripped) * NANOS_PER_SECOND
    else:
        try:
            nanos = parse_duration(stripped)
        except DurationSyntaxError:
            nanos = None
    if nanos is None or nanos < 0:
        fail(
            EXIT_USAGE,
            f"--request-timeout: {shown(text)} is not a timeout: give whole seconds or a Go duration "
            "such as 30s or 1m (0: no limit)",
        )
    return nanos / NANOS_PER_SECOND if nanos else None


_MAX_TIMEOUT_DIGITS: Final = 12
"""A bare number of seconds longer than this is refused before it is multiplied (about 31,000 years)."""


@dataclass(frozen=True)
class ClusterFlags:
    """The options every command that reads the cluster takes, from ``--stack`` to ``--request-timeout``
    (:func:`cluster_options` adds them to a command)."""

    stack: str | None = None
    config: Path | None = None
    project_dir: Path = DEFAULT_PROJECT_DIR
    kubeconfig: str | None = None
    context: str | None = None
    namespace: str | None = None
    base_domain: str | None = None
    request_timeout: str = DEFAULT_REQUEST_TIMEOUT


def cluster_options(stack: Any = LiveStackOption) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A command that takes a ``flags: ClusterFlags`` parameter gets, in its place, the eight options
    of :class:`ClusterFlags` (``stack``: the annotated type of its ``--stack``); typer sees them as
    the command's own, and the command is called with them gathered into ``flags``."""
    annotations = {
        "stack": stack,
        "config": ConfigOption,
        "project_dir": ProjectDirOption,
        "kubeconfig": KubeconfigOption,
        "context": ContextOption,
        "namespace": NamespaceOption,
        "base_domain": BaseDomainOption,
        "request_timeout": RequestTimeoutOption,
    }
    defaults = ClusterFlags()

    def add_options(command: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(command, eval_str=True)
        params: list[inspect.Parameter] = []
        for param in signature.parameters.values():
            if param.name != "flags":
                params.append(param)
                continue
            params += [
                inspect.Parameter(name, param.kind, annotation=kind, default=getattr(defaults, name))
                for name, kind in annotations.items()
            ]

        @functools.wraps(command)
        def with_flags(**given: Any) -> None:
            flags = ClusterFlags(**{name: given.pop(name) for name in annotations})
            command(**given, flags=flags)

        with_flags.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        with_flags.__annotations__ = {p.name: p.annotation for p in params}
        return with_flags

    return add_options


def load_view(flags: ClusterFlags) -> ClusterView:
    """Read the platform settings from ``--stack``/``--config`` when one is given (else Flyte's
    defaults), then apply ``--namespace``/``--base-domain`` on top."""
    from flyte_apps.cli.stackfile import plan_stack_files
    from flyte_apps.core.stack import load_stack_config
    from flyte_apps.kube.target import KubeTarget

    stack, config, project_dir = flags.stack, flags.config, flags.project_dir
    namespace, base_domain, kubeconfig = flags.namespace, flags.base_domain, flags.kubeconfig
    refuse_stack_and_config(stack, config)
    timeout = parse_request_timeout(flags.request_timeout)
    raw: dict[str, object] = {}
    plan: StackPlan | None = None
    if stack is not None or config is not None:
        plan, read = plan_stack_files(project_dir=project_dir, stack=stack, config_file=config)
        raw = read.values
    overrides: dict[str, object] = {}
    if namespace is not None:
        overrides["namespace"] = namespace
    if base_domain is not None:
        overrides["baseDomain"] = base_domain
    if plan is not None and not overrides:
        platform = plan.platform
    else:
        given = raw.get(f"{c.PROJECT_NAME}:platform")
        platform_raw: dict[str, Any] = {**(given if isinstance(given, dict) else {}), **overrides}
        platform = load_stack_config({f"{c.PROJECT_NAME}:platform": platform_raw}).platform
    return ClusterView(
        platform=platform,
        default_project=_stack_default(raw, "project"),
        default_domain=_stack_default(raw, "domain"),
        plan=plan,
        target=KubeTarget(kubeconfig=kubeconfig, context=flags.context),
        stack_target=KubeTarget()
        if kubeconfig
        else stack_target(raw, project_dir, source=str(config or stack)),
        request_timeout=timeout,
    )


def refuse_stack_and_config(stack: str | None, config: Path | None) -> None:
    """``--stack`` and ``--config`` name the same thing two ways: giving both is a usage error."""
    if stack is not None and config is not None:
        fail(EXIT_USAGE, "give --stack or --config, not both")


def stack_target(raw: dict[str, object], project_dir: Path, *, source: str) -> KubeTarget:
    """The cluster the stack names (``kubernetes:kubeconfig``/``kubernetes:context``), as the stack's
    `pulumi up` would reach it: a relative kubeconfig path is the project directory's (where Pulumi
    runs the program and the provider). A setting the commands cannot use (an encrypted value, not a
    string) is an error that says so, never a quiet fall-back to ``KUBECONFIG``: that may well be
    another cluster."""
    from flyte_apps.kube.target import KubeTarget

    values: dict[str, str | None] = {}
    for key in (c.CONFIG_KUBECONFIG, c.CONFIG_KUBE_CONTEXT):
        value = raw.get(key)
        if value is None or isinstance(value, str):
            values[key] = value or None
            continue
        what = (
            "an encrypted (secure:) value"
            if isinstance(value, dict) and "secure" in value
            else "not a string"
        )
        fail(
            EXIT_USAGE,
            f"{key} of {source} is {what}, which flyte-apps cannot read; give the same cluster with "
            "--kubeconfig (and --context) instead: it does not fall back to KUBECONFIG",
        )
    path = values[c.CONFIG_KUBECONFIG]
    if path is not None and "\n" not in path and not Path(path).expanduser().is_absolute():
        beside = project_dir / Path(path).expanduser()
        if beside.is_file():  # else it is content, as pulumi-kubernetes takes a value it cannot stat
            path = str(beside)
    return KubeTarget(kubeconfig=path, context=values[c.CONFIG_KUBE_CONTEXT])


def resolve_app(
    view: ClusterView, api: k8s.ApiClient, *, name: str, project: str | None, domain: str | None
) -> AppId:
    """Which app ``NAME`` means: flags first, then the stack's apps and defaults, then the cluster.

    A name that still matches several apps is a usage error listing them (exit 2); none is exit 1.
    """
    from flyte_apps.core.config.models import AppId
    from flyte_apps.kube.api import list_custom_objects

    if project is not None and domain is not None:
        return AppId(org="", project=project, domain=domain, name=name)
    if view.plan is not None:
        known = [
            app.config.id
            for app in view.plan.apps
            if app.config.id.name == name
            and project in (None, app.config.id.project)
            and domain in (None, app.config.id.domain)
        ]
        if len(known) == 1:
            return known[0]
        if len(known) > 1:
            _ambiguous(name, known)
        filled_project = project or view.default_project
        filled_domain = domain or view.default_domain
        if filled_project is not None and filled_domain is not None:
            return AppId(org="", project=filled_project, domain=filled_domain, name=name)
    selector = [f"{c.LABEL_APP_MANAGED}={c.TRUE}", f"{c.LABEL_APP_NAME}={name}"]
    if project is not None:
        selector.append(f"{c.LABEL_PROJECT}={project}")
    if domain is not None:
        selector.append(f"{c.LABEL_DOMAIN}={domain}")
    items = list_custom_objects(
        api,
        group=c.KNATIVE_GROUP,
        version=c.KNATIVE_VERSION,
        plural=c.KSERVICE_PLURAL,
        namespace=view.namespace,
        label_selector=",".join(selector),
        retry=view.retry(),
    )
    found = sorted(
        {
            AppId(org="", project=labels[c.LABEL_PROJECT], domain=labels[c.LABEL_DOMAIN], name=name)
            for item in items
            if (labels := (item.get("metadata") or {}).get("labels") or {}).get(c.LABEL_PROJECT)
            and labels.get(c.LABEL_DOMAIN)
        },
        key=str,
    )
    if not found:
        fail(EXIT_NOT_FOUND, f"app '{name}' not found in namespace {view.namespace}")
    if len(found) > 1:
        _ambiguous(name, found)
    return found[0]


def fail(code: int, message: str) -> NoReturn:
    """One line on stderr, then exit with ``code``."""
    typer.echo(f"error: {printable(redact(message))}", err=True)
    raise typer.Exit(code)


MAX_PROBLEM_LINES: Final = 200
"""Config problems printed at most: a generated or hostile stack with thousands of mistakes must not
flood a CI log; the count of the others is said."""


@contextmanager
def translate_errors() -> Iterator[None]:
    """Map domain errors to exit codes: config 2, not found 1, cluster unreachable/forbidden 3,
    Ctrl-C 130 — with a one-line message and no traceback."""
    try:
        yield
    except ConfigError as exc:
        for problem in exc.problems[:MAX_PROBLEM_LINES]:
            typer.echo(f"error: {printable(redact(str(problem)))}", err=True)
        hidden = len(exc.problems) - MAX_PROBLEM_LINES
        if hidden > 0:
            typer.echo(f"error: and {hidden:,} more problems, not shown (fix these first)", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    except KubeNotFound as exc:
        fail(EXIT_NOT_FOUND, str(exc))
    except KubeConfigError as exc:
        fail(EXIT_CLUSTER, str(exc))
    except KubeError as exc:
        fail(EXIT_CLUSTER, str(exc))
    except FlyteAppsError as exc:
        # Anything else we raise on purpose (e.g. a KService that is not a readable Flyte app).
        fail(EXIT_NOT_FOUND, str(exc))
    except KeyboardInterrupt:
        raise typer.Exit(EXIT_INTERRUPTED) from None


def with_client(view: ClusterView, action: Callable[[k8s.ApiClient], T]) -> T:
    """Run ``action`` with a fresh client and close it afterwards."""
    api = view.client()
    try:
        return action(api)
    finally:
        api.close()  # type: ignore[no-untyped-call]


def _ambiguous(name: str, candidates: list[AppId]) -> NoReturn:
    listed = ", ".join(str(app) for app in candidates)
    fail(EXIT_USAGE, f"app name '{name}' matches several apps: {listed}; pass --project and --domain")


def _stack_default(raw: dict[str, object], key: str) -> str | None:
    value = raw.get(f"{c.PROJECT_NAME}:{key}")
    return value if isinstance(value, str) else None
