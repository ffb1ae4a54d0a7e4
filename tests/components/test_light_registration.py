"""The KService's registration options, built with one merge, keep what the program asked for."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from google.protobuf.json_format import MessageToDict

from flyte_apps.core import constants as c
from tests.support.config import minimal_config
from tests.support.pulumi_harness import CaptureMonitor, install, run_program

SOURCE_FIELDS = ("sourcePosition", "stackTrace")
"""Where the resource was constructed: differs by call site, not by what is registered."""
METADATA = {"name": "apps", "labels": {"app.kubernetes.io/managed-by": "pulumi", "team": "ml"}}


class RequestCapture(CaptureMonitor):
    """Keeps every ``RegisterResourceRequest`` as a dict, without its source position."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict[str, Any]] = []

    def RegisterResource(self, request: Any) -> Any:  # the gRPC method's name
        fields = MessageToDict(request)
        for name in SOURCE_FIELDS:
            fields.pop(name, None)
        self.requests.append(fields)
        return super().RegisterResource(request)


def _register(make: Any) -> list[dict[str, Any]]:
    capture = RequestCapture()
    pulumi.runtime.set_mocks(capture.mocks, project="flyte-apps", stack="dev", preview=False, monitor=capture)

    @pulumi.runtime.test  # type: ignore[untyped-decorator]  # the SDK leaves it untyped
    def program() -> None:
        provider = k8s.Provider("kubernetes")
        make(pulumi.ResourceOptions(provider=provider, retain_on_delete=True))

    program()
    return capture.requests


def test_adopted_kservice_keeps_its_import_option() -> None:
    config = minimal_config(adopt=True)
    config["flyte-apps:platform"] = {**config.get("flyte-apps:platform", {}), "adoptNamespace": True}
    capture, _ = install(config)
    run_program()
    (kservice,) = capture.of_type(c.TYPE_KSERVICE)
    (component,) = capture.of_type(c.TYPE_FLYTE_APP)
    assert kservice.import_id == f"{kservice.inputs['metadata']['namespace']}/{component.name}"
    assert kservice.parent == component.urn
