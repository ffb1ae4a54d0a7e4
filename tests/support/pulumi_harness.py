"""Run Pulumi code under mocks and capture every registration as the engine would receive it.

``Mocks.new_resource`` sees a resource's type, name, inputs and provider, but not its other options:
parent and dependencies are not on ``MockResourceArgs``. So the capture is a ``MockMonitor`` that
reads each ``RegisterResourceRequest`` itself (parent URN, provider reference, dependencies,
``retainOnDelete``) and then lets the standard monitor answer it. What the tests assert is what
goes over the wire to the engine.
"""

from __future__ import annotations

import json
import logging
import runpy
import signal
from dataclasses import dataclass
from typing import Any

import pulumi
from pulumi.runtime.mocks import MockMonitor

from tests.support.config import REPO_ROOT

MAIN = REPO_ROOT / "__main__.py"
PROJECT = "flyte-apps"
STACK_TYPE = "pulumi:pulumi:Stack"


@dataclass(frozen=True)
class Registered:
    """One resource registration, as the engine receives it."""

    urn: str
    typ: str
    name: str
    inputs: dict[str, Any]
    """The inputs as the mocks received them (camelCase, numbers as floats)."""
    custom: bool
    parent: str
    """The parent's URN; the stack's for a resource registered without a parent."""
    provider: str | None
    """Provider reference (``<provider URN>::<provider id>``); None when the engine picks the default."""
    dependencies: frozenset[str]
    """Every URN the resource waits for: ``depends_on`` plus the resources its inputs come from."""
    input_dependencies: frozenset[str]
    """The URNs its inputs come from (the union of ``propertyDependencies``)."""
    retain_on_delete: bool | None
    import_id: str = ""
    """The ``import`` option's ID (``<namespace>/<name>`` for pulumi-kubernetes); empty without one."""
    replace_on_changes: tuple[str, ...] = ()
    delete_before_replace: bool = False

    @property
    def provider_urn(self) -> str | None:
        return None if self.provider is None else self.provider.rsplit("::", 1)[0]

    @property
    def explicit_dependencies(self) -> frozenset[str]:
        """The URNs named in ``depends_on``: dependencies that no input accounts for."""
        return self.dependencies - self.input_dependencies


class EchoMocks(pulumi.runtime.Mocks):
    """Every resource gets the id ``<name>-id`` and its inputs back as outputs; calls return nothing.

    A resource of a type in ``created`` gets no id, as in a preview of its creation (the engine
    then gives the program an unknown id)."""

    def __init__(self, created: frozenset[str] = frozenset()) -> None:
        self.created = created

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        return ("" if args.typ in self.created else f"{args.name}-id"), dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


class CaptureMonitor(MockMonitor):
    """The SDK's mock monitor, also recording every registration with its options."""

    def __init__(self, created: frozenset[str] = frozenset()) -> None:
        super().__init__(EchoMocks(created))
        self.registered: list[Registered] = []

    def RegisterResource(self, request: Any) -> Any:  # the gRPC method's name
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type == STACK_TYPE:
            return response
        self.registered.append(
            Registered(
                urn=response.urn,
                typ=request.type,
                name=request.name,
                # The mocks echo inputs as outputs, so the state kept is what new_resource received.
                inputs=self.resources[response.urn].state,
                custom=bool(request.custom),
                parent=request.parent,
                provider=request.provider or None,
                dependencies=frozenset(request.dependencies),
                input_dependencies=frozenset(
                    urn for deps in request.propertyDependencies.values() for urn in deps.urns
                ),
                retain_on_delete=request.retainOnDelete if request.HasField("retainOnDelete") else None,
                import_id=request.importId,
                replace_on_changes=tuple(request.replaceOnChanges),
                delete_before_replace=request.deleteBeforeReplace,
            )
        )
        return response

    def of_type(self, typ: str) -> list[Registered]:
        return [r for r in self.registered if r.typ == typ]

    def one(self, typ: str, name: str) -> Registered:
        found = [r for r in self.registered if (r.typ, r.name) == (typ, name)]
        assert len(found) == 1, f"expected one {typ} {name!r}, registered {len(found)}"
        return found[0]

    def children_of(self, parent: Registered) -> list[Registered]:
        return [r for r in self.registered if r.parent == parent.urn]


class LogCapture(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def install(
    config: dict[str, Any] | None = None,
    *,
    secret_keys: list[str] | None = None,
    stack: str = "dev",
    preview: bool = False,
    created: frozenset[str] = frozenset(),
) -> tuple[CaptureMonitor, LogCapture]:
    """Fresh mocks and config for one program run (config values go in as JSON strings); with
    ``preview``, a preview in which the resources of the ``created`` types are being created."""
    capture = CaptureMonitor(created)
    logger = logging.getLogger(f"pulumi-mock-{id(capture)}")
    logs = LogCapture()
    logger.handlers = [logs]
    logger.setLevel(logging.DEBUG)
    pulumi.runtime.set_mocks(
        capture.mocks, project=PROJECT, stack=stack, preview=preview, logger=logger, monitor=capture
    )
    pulumi.runtime.set_all_config(
        {
            key: value if isinstance(value, str) else json.dumps(value)
            for key, value in (config or {}).items()
        },
        secret_keys or [],
    )
    return capture, logs


@pulumi.runtime.test
def run_program() -> None:
    """Run ``__main__.py``; the decorator waits for every registration before returning, so callers
    assert on the capture afterwards."""
    # The program takes SIGINT over for its own process (components.program.exit_quietly_when_stopped);
    # here that process is the test run's, which must keep its own handler.
    handler = signal.getsignal(signal.SIGINT)
    try:
        runpy.run_path(str(MAIN), run_name="__main__")
    finally:
        signal.signal(signal.SIGINT, handler)
