"""What the program registers without pulumi-kubernetes' typed classes is what those classes register.

``components.program.NamespaceResource`` stands in for ``pulumi_kubernetes.core.v1.Namespace`` and
``NamespacePatch`` (importing ``pulumi_kubernetes.core.v1`` costs the program about 0.7 s and 19 MiB);
the KService's options are built with one merge. Every field of each ``RegisterResourceRequest``
(type, name, parent, inputs, property dependencies, provider, version, options) must be the same as
the typed class's, except where in the source it was called from.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
from google.protobuf.json_format import MessageToDict

from components.program import NAMESPACE_NAME, NamespaceResource
from flyte_apps.core import constants as c
from tests.support.config import REPO_ROOT, minimal_config
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


@pytest.mark.parametrize(
    ("token", "typed"),
    [(c.TYPE_NAMESPACE, "Namespace"), (c.TYPE_NAMESPACE_PATCH, "NamespacePatch")],
)
def test_namespace_registers_as_the_typed_class(token: str, typed: str) -> None:
    def ours(opts: pulumi.ResourceOptions) -> None:
        NamespaceResource(token, NAMESPACE_NAME, copy.deepcopy(METADATA), opts)

    def theirs(opts: pulumi.ResourceOptions) -> None:
        getattr(k8s.core.v1, typed)(NAMESPACE_NAME, metadata=copy.deepcopy(METADATA), opts=opts)

    (mine,) = [r for r in _register(ours) if r.get("type") == token]
    (expected,) = [r for r in _register(theirs) if r.get("type") == token]
    assert expected["object"]["metadata"] == METADATA
    assert mine == expected


def test_program_does_not_load_the_typed_core_package() -> None:
    """The program registers its namespace without ``pulumi_kubernetes.core.v1`` (run in a fresh
    interpreter: other tests import it)."""
    code = (
        "import sys, json\n"
        "from tests.support.pulumi_harness import install, run_program\n"
        f"install(json.loads({json.dumps(json.dumps(minimal_config()))}))\n"
        "run_program()\n"
        "print('pulumi_kubernetes.core.v1' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip().splitlines()[-1] == "False", done.stderr


def test_adopted_kservice_keeps_its_import_option() -> None:
    config = minimal_config(adopt=True)
    config["flyte-apps:platform"] = {**config.get("flyte-apps:platform", {}), "adoptNamespace": True}
    capture, _ = install(config)
    run_program()
    (kservice,) = capture.of_type(c.TYPE_KSERVICE)
    (component,) = capture.of_type(c.TYPE_FLYTE_APP)
    assert kservice.import_id == f"{kservice.inputs['metadata']['namespace']}/{component.name}"
    assert kservice.parent == component.urn
