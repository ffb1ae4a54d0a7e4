"""The component package through the real engine: a program in YAML, TypeScript, Go or Python adds it
(``pulumi package add components/plugin``) and deploys two apps, one stopped (``consumers.py``). For
each language:

- ``pulumi package get-schema`` prints the committed schema;
- the live objects equal what ``flyte-apps render`` prints for a stack file with the same apps (what
  the stack-config program deploys: ``test_up`` proves that);
- a second ``pulumi up`` changes nothing (``--expect-no-changes``);
- a bad port fails the preview with our message naming the input;
- the stopped app's reaper (the package's own custom resource) waited for its stop revision;
- ``pulumi destroy`` removes the KServices the consumer created.

The YAML consumer's ``FlyteApps`` owns Knative's config patches; the others need a stack that made
them (``knative_settings``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Final

import pytest
import yaml

from tests.e2e.outcome import check
from tests.e2e.package_scenarios import (
    BAD_PORT,
    CONSUMER_STACK,
    CONSUMER_TIMEOUT_S,
    CONSUMERS,
    GOOD_PORT,
    KNATIVE,
    PORT_CONFIG,
    Consumer,
    apps,
)
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.stacks import Deployed
from tests.e2e.scenarios.suite import KSERVICES, Suite

OUTPUT_TAIL_CHARS: Final = 2000
BESIDE_A_STACK: Final = ("typescript", "go", "python")
"""The consumers of ``FlyteApp`` alone (no Knative config of their own)."""


def reference_stack(suite: Suite, stack: str, namespace: str, port: int, *, knative: bool) -> None:
    """A stack file of the stack-config program with the consumer's apps: what ``render`` compares with."""
    platform, app_list = apps(port, namespace)
    document = {"config": {"flyte-apps:platform": platform, "flyte-apps:apps": app_list}}
    if knative:
        document["config"]["flyte-apps:knative"] = KNATIVE
    suite.stack_file(stack).write_text(yaml.safe_dump(document, sort_keys=False))


def consumer_pulumi(
    suite: Suite, directory: Path, *args: str, check_rc: bool = True
) -> subprocess.CompletedProcess[str]:
    argv = [str(suite.tools["pulumi"].binary("pulumi")), *args, "--non-interactive", "--color=never"]
    return suite.run(argv, timeout=CONSUMER_TIMEOUT_S, cwd=directory, check_rc=check_rc)


def consume(suite: Suite, plugin: Path, consumer: Consumer) -> str:
    namespace = f"consumer-{consumer.language}"
    directory = suite.work / namespace
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    consumer.write(directory, namespace)
    if consumer.npm:
        suite.run(["npm", "ci", "--no-audit", "--no-fund"], timeout=CONSUMER_TIMEOUT_S, cwd=directory)
    if consumer.install:
        consumer_pulumi(suite, directory, "install")
    consumer_pulumi(suite, directory, "stack", "init", CONSUMER_STACK)
    consumer_pulumi(suite, directory, "config", "set", "--path", PORT_CONFIG, str(GOOD_PORT))
    consumer_pulumi(suite, directory, "config", "set", "kubeconfig", str(suite.plane.kubeconfig))
    consumer_pulumi(suite, directory, "package", "add", str(plugin))
    served = json.loads(consumer_pulumi(suite, directory, "package", "get-schema", str(plugin)).stdout)
    committed = json.loads((plugin / "schema.json").read_text())
    check(served == committed, "`pulumi package get-schema` differs from components/plugin/schema.json")
    consumer_pulumi(suite, directory, "up", "--yes", "--skip-preview")
    reference = f"ref-{consumer.language}"
    reference_stack(suite, reference, namespace, GOOD_PORT, knative=consumer.whole_stack)
    compared = suite.compare_with_render(reference, kinds=None if consumer.whole_stack else {"Service"})
    consumer_pulumi(suite, directory, "up", "--yes", "--expect-no-changes", "--diff")
    consumer_pulumi(suite, directory, "config", "set", "--path", PORT_CONFIG, str(BAD_PORT))
    bad = consumer_pulumi(suite, directory, "preview", check_rc=False)
    output = bad.stdout + bad.stderr
    expected_path = (
        "apps[0].container.ports[0].containerPort"
        if consumer.whole_stack
        else "container.ports[0].containerPort"
    )
    check(bad.returncode != 0, f"a bad input was not refused:\n{output[-OUTPUT_TAIL_CHARS:]}")
    check(expected_path in output, f"the error does not name {expected_path}:\n{output[-OUTPUT_TAIL_CHARS:]}")
    consumer_pulumi(suite, directory, "config", "set", "--path", PORT_CONFIG, str(GOOD_PORT))
    state = json.loads(consumer_pulumi(suite, directory, "stack", "export").stdout)
    resources = state["deployment"]["resources"]
    reapers = [r for r in resources if r["type"] == "flyte:apps:RevisionReaper"]
    check(len(reapers) == 1, f"not one reaper for the stopped app: {sorted({r['type'] for r in resources})}")
    stop_revision = reapers[0].get("outputs", {}).get("stopRevision")
    check(bool(stop_revision), f"the reaper waited for no stop revision: {reapers[0].get('outputs')}")
    consumer_pulumi(suite, directory, "destroy", "--yes", "--skip-preview")
    left = suite.get(KSERVICES, namespace=namespace)["items"]
    check(not left, f"KServices left after destroy: {[s['metadata']['name'] for s in left]}")
    return f"{compared} objects equal to render; no changes on a second run; bad input named"


def test_package_yaml(suite: Suite, component_package: Path, record: Record) -> None:
    """A YAML program's ``flyte:apps:FlyteApps`` of two apps with Knative's config patches, through an
    explicit Kubernetes provider; the error names ``apps[0].container.ports[0].containerPort``."""
    record(consume(suite, component_package, CONSUMERS["yaml"]))


@pytest.mark.parametrize("language", BESIDE_A_STACK)
def test_package(
    language: str, suite: Suite, component_package: Path, knative_settings: Deployed, record: Record
) -> None:
    """Two ``flyte:apps:FlyteApp`` from the generated SDK (``@pulumi/flyte`` from the npm cache; the
    Go module ``example.com/pulumi-flyte/sdk/go/flyte/apps``, typed args written from the schema;
    ``pulumi_flyte`` linked into requirements.txt) beside a Namespace of the program's own; the
    KServices equal `render`; the error names ``container.ports[0].containerPort``."""
    record(consume(suite, component_package, CONSUMERS[language]))
