"""Which cluster to talk to, found the way pulumi-kubernetes finds it, and a client for it.

The CLI and the reaper must reach the *same* cluster ``pulumi up`` does, so the lookup order is
pulumi-kubernetes' (explicit kubeconfig, the stack's ``kubernetes:kubeconfig``/``kubernetes:context``,
``KUBECONFIG``, ``~/.kube/config``, the in-cluster service account). Every ``ApiClient`` gets its
own configuration without urllib3 retries (:mod:`flyte_apps.kube.retry` is the only retry layer)
and reads every answer within bounds (:mod:`flyte_apps.kube.bounded`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

import urllib3
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException

from flyte_apps.core.kubeconfig import is_kubeconfig_path
from flyte_apps.kube.bounded import BoundedApiClient
from flyte_apps.kube.errors import KubeConfigError

DEFAULT_KUBECONFIG: Final = Path(".kube") / "config"
"""Relative to the home directory, as kubectl and pulumi-kubernetes use it."""
CURRENT_CONTEXT: Final = "current-context"
CONNECTION_POOL_SIZE: Final = 64
"""HTTP connections kept per client (log follow streams, watch, API calls at once)."""


@dataclass(frozen=True)
class KubeTarget:
    """Which cluster to talk to, as pulumi-kubernetes is told it.

    ``kubeconfig`` is a file path *or* the kubeconfig content itself (YAML or JSON), exactly
    like the ``kubernetes:kubeconfig`` stack setting; ``context`` picks a context in it.
    """

    kubeconfig: str | None = None
    context: str | None = None
    files: tuple[str, ...] = ()
    """``KUBECONFIG``'s existing files when it names several: merged as kubectl and client-go merge
    them (the first file to set a map key wins), instead of ``kubeconfig``."""

    @property
    def kubeconfig_is_content(self) -> bool:
        """Content, not a path: anything that is not an existing file (pulumi-kubernetes' rule)."""
        return bool(self.kubeconfig) and not is_kubeconfig_path(
            self.kubeconfig or "", is_file=lambda value: Path(value).expanduser().is_file()
        )


def _home(env: Mapping[str, str]) -> Path:
    home = env.get("HOME") or env.get("USERPROFILE")
    return Path(home) if home else Path.home()


def _resolve(
    explicit: KubeTarget | None, stack: KubeTarget | None, env: Mapping[str, str]
) -> tuple[KubeTarget, list[str]]:
    """Resolve a target and describe every source consulted (for "nothing found" errors)."""
    tried: list[str] = []
    explicit = explicit or KubeTarget()
    stack = stack or KubeTarget()
    if explicit.kubeconfig:
        # A context from the stack belongs to the stack's kubeconfig, not to this one.
        return KubeTarget(explicit.kubeconfig, explicit.context), tried
    tried.append("an explicit kubeconfig (none given)")
    context = explicit.context or stack.context
    if stack.kubeconfig:
        return KubeTarget(stack.kubeconfig, context), tried
    tried.append("the stack setting kubernetes:kubeconfig (unset)")
    raw = env.get("KUBECONFIG", "")
    paths = [p for p in raw.split(os.pathsep) if p]
    existing = tuple(str(Path(path).expanduser()) for path in paths if Path(path).expanduser().is_file())
    if len(existing) == 1:
        return KubeTarget(existing[0], context), tried
    if existing:
        return KubeTarget(None, context, files=existing), tried
    tried.append(f"KUBECONFIG ({', '.join(paths)}: no such file)" if paths else "KUBECONFIG (unset)")
    default = _home(env) / DEFAULT_KUBECONFIG
    if default.is_file():
        return KubeTarget(str(default), context), tried
    tried.append(f"{default} (no such file)")
    return KubeTarget(None, context), tried


def resolve_target(
    explicit: KubeTarget | None, stack: KubeTarget | None, env: Mapping[str, str]
) -> KubeTarget:
    """Pick the kubeconfig and context the way pulumi-kubernetes does.

    Order: the explicit kubeconfig (with its own context), the stack's ``kubernetes:kubeconfig``
    / ``kubernetes:context``, the existing files of ``KUBECONFIG`` (a ``os.pathsep`` list, merged
    as kubectl merges it), ``~/.kube/config``.  An explicit context overrides the stack's.  A result without
    ``kubeconfig`` means "use the in-cluster service account".
    """
    return _resolve(explicit, stack, env)[0]


def _new_configuration() -> k8s.Configuration:
    """A fresh configuration (never the process-wide default) without urllib3 retries."""
    configuration = k8s.Configuration()
    # Our ``call`` is the only retry layer: urllib3 retrying too would multiply attempts and
    # hide how long a failing cluster was waited for.
    configuration.retries = urllib3.util.Retry(total=0, redirect=False)
    # `logs -f` holds one streaming connection per replica; the default pool (5 per CPU) would
    # make urllib3 warn and discard connections when following more replicas than that.
    configuration.connection_pool_maxsize = CONNECTION_POOL_SIZE
    return configuration


def build_api_client(
    target: KubeTarget | None = None,
    env: Mapping[str, str] | None = None,
    *,
    stack: KubeTarget | None = None,
) -> k8s.ApiClient:
    """A new ``ApiClient`` for ``target`` (then ``stack``, env, home, in-cluster).

    Raises :class:`KubeConfigError` naming every source tried when none yields a cluster.
    The kubeconfig is never written back (``persist_config=False``) and the ``kubernetes``
    package's global default configuration is left untouched.
    """
    environment: Mapping[str, str] = os.environ if env is None else env
    resolved, tried = _resolve(target, stack, environment)
    configuration = _new_configuration()
    if resolved.kubeconfig is None and not resolved.files:
        try:
            load_incluster = cast(Callable[..., None], k8s_config.load_incluster_config)
            load_incluster(client_configuration=configuration)
        except ConfigException as exc:
            tried.append(f"the in-cluster service account ({exc})")
            msg = "no Kubernetes configuration found; tried " + "; ".join(tried)
            raise KubeConfigError(msg) from exc
        return BoundedApiClient(configuration)
    loaded: dict[str, Any] | None = None
    config_file = ""
    if resolved.kubeconfig and resolved.kubeconfig_is_content:
        source = "the kubeconfig content"
        try:
            content = yaml.safe_load(resolved.kubeconfig)
        except yaml.YAMLError as exc:
            raise KubeConfigError(_not_yaml(source, exc)) from exc
        if not isinstance(content, dict):
            msg = (
                "the kubeconfig names no existing file and is not kubeconfig content (a YAML/JSON "
                "mapping); its value is not shown, as it may hold a credential"
            )
            raise KubeConfigError(msg)
        loaded = content
    elif resolved.files:
        config_file = os.pathsep.join(resolved.files)  # the loader splits it and merges the files
        source = f"the kubeconfig files {', '.join(resolved.files)} (KUBECONFIG)"
        if resolved.context is None:
            resolved = KubeTarget(None, _first_current_context(resolved.files), files=resolved.files)
    else:
        config_file = str(Path(resolved.kubeconfig or "").expanduser())
        source = f"kubeconfig file {config_file}"
    # The loaders are untyped in the ``kubernetes`` package; their contract is documented.
    from_dict = cast(Callable[..., None], k8s_config.load_kube_config_from_dict)
    from_file = cast(Callable[..., None], k8s_config.load_kube_config)
    try:
        with _kubeconfig_complaints() as complaints:
            if loaded is not None:
                from_dict(
                    config_dict=loaded,
                    context=resolved.context,
                    persist_config=False,
                    client_configuration=configuration,
                )
            else:
                from_file(
                    config_file=config_file,
                    context=resolved.context,
                    persist_config=False,
                    client_configuration=configuration,
                )
        if complaints:
            # The kubernetes package logs an exec plugin's failure (its stderr included, which may
            # hold a credential) and carries on without credentials; we stop, without the output.
            msg = (
                f"cannot load {source}: its credential plugin failed ({complaints[0]}); the plugin's "
                "output is not shown, as it may hold a credential: run its command yourself to see why"
            )
            raise KubeConfigError(msg)
        _trim_tokens(configuration)
        return BoundedApiClient(configuration)
    except yaml.YAMLError as exc:
        raise KubeConfigError(_not_yaml(source, exc)) from exc
    except (ConfigException, OSError, ValueError, TypeError) as exc:
        context = f" (context {resolved.context!r})" if resolved.context else ""
        msg = f"cannot load {source}{context}: {exc}"
        raise KubeConfigError(msg) from exc


def _first_current_context(files: tuple[str, ...]) -> str | None:
    """The ``current-context`` of the first file that sets one: client-go's rule (kubectl's, and
    pulumi-kubernetes'), where the kubernetes package's merger keeps the last file's."""
    for name in files:
        try:
            content = yaml.safe_load(Path(name).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError):
            continue  # the loader reports the file
        current = content.get(CURRENT_CONTEXT) if isinstance(content, dict) else None
        if isinstance(current, str) and current:
            return current
    return None


_KUBECONFIG_MODULES: Final = ("kubernetes/config/kube_config.py", "kubernetes/config/exec_provider.py")
_TOKEN_KEY: Final = "BearerToken"
"""Where the kubernetes package keeps ``Authorization``'s value (``Bearer <token>``)."""


@contextmanager
def _kubeconfig_complaints() -> Iterator[list[str]]:
    """What the kubernetes package's kubeconfig loader logs while it loads (an exec plugin that failed
    or gave nothing), kept from the terminal: a record's message may quote the plugin's stderr. Each
    complaint is reduced to its first words (the loader's own prefix, never the plugin's output)."""
    complaints: list[str] = []

    def keep(record: logging.LogRecord) -> bool:
        if record.pathname.replace(os.sep, "/").endswith(_KUBECONFIG_MODULES):
            text = str(record.msg)
            complaints.append(
                "exec: " + text.split(":", 2)[1].strip()[:60] if text.startswith("exec:") else "exec"
            )
            return False
        return True

    root = logging.getLogger()
    root.addFilter(keep)
    try:
        yield complaints
    finally:
        root.removeFilter(keep)


def _trim_tokens(configuration: k8s.Configuration) -> None:
    """Trim the bearer token as kubectl does (a ``tokenFile`` written by ``echo`` ends in a newline,
    which the kubernetes package keeps, and an HTTP library then quotes the whole header in its
    error), now and after each refresh of it."""

    def trim(config: k8s.Configuration) -> None:
        value = config.api_key.get(_TOKEN_KEY)
        if isinstance(value, str):
            scheme, _, token = value.strip().partition(" ")
            config.api_key[_TOKEN_KEY] = f"{scheme} {token.strip()}" if token else scheme

    refresh = configuration.refresh_api_key_hook

    def refreshed(config: k8s.Configuration) -> None:
        if refresh is not None:
            refresh(config)
        trim(config)

    trim(configuration)
    if refresh is not None:
        configuration.refresh_api_key_hook = refreshed


def _not_yaml(source: str, exc: yaml.YAMLError) -> str:
    """Only the position and the parser's complaint: ``str(exc)`` quotes the offending line, which
    may hold a token."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    problem = getattr(exc, "problem", None)
    return f"{source} is not valid YAML/JSON{where}" + (f": {problem}" if problem else "")
