"""Stacks made by the release before this one (issue 35): main at 4004dc2 wrote ``flyte.org/spec`` in
Python's field-number order. That commit's program deploys a stack with a running and a stopped app;
then `pulumi up` with this checkout's program updates the KServices' annotations in place (protobuf-go's
bytes, judged by protobuf-go): no replacement, no new Revision (the KServices' and Configurations'
``metadata.generation``, the Revisions' names and UIDs unchanged), and the stopped app's RevisionReaper
updates (its ``spec_sha`` input changed) without deleting anything; the Kubernetes provider updates in
place, taking its ``clusterIdentifier``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Final

from tests.e2e.outcome import ScenarioFailed, check
from tests.e2e.scenarios.reporting import Record
from tests.e2e.scenarios.stacks import Deployed
from tests.e2e.scenarios.suite import KSERVICES, PULUMI_TIMEOUT_S, REPO, REVISIONS, STACKS, Suite

OLD_RELEASE: Final = "4004dc2"
"""main before the spec bytes took protobuf-go's order: the last commit of the release users run."""
PROGRAM_FILES: Final = ("Pulumi.yaml", "__main__.py", "components", "flyte_apps")
STACK: Final = "upgrade"
NAMESPACE: Final = "flyte-upgrade"
KSERVICE_NAMES: Final = ("running-upgrade-development", "paused-upgrade-development")
CONFIGURATIONS: Final = "configurations.serving.knative.dev"
SPEC: Final = "flyte.org/spec"
GIT_TIMEOUT_S: Final = 60.0
CHANGING_OPS: Final = frozenset({"create", "delete", "replace", "create-replacement", "delete-replaced"})


def old_program(work: Path) -> Path:
    """The old release's program in a project directory of its own (with this checkout's virtualenv:
    requirements.lock is the same), from git history; a clone without that commit fails, saying why."""
    found = subprocess.run(
        ["git", "-C", str(REPO), "cat-file", "-e", f"{OLD_RELEASE}^{{commit}}"],
        capture_output=True,
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    if found.returncode != 0:
        msg = (
            f"this clone lacks commit {OLD_RELEASE} (the release before the spec-bytes change), which the "
            "upgrade scenario deploys first: use a clone with its history (`git fetch --unshallow`)"
        )
        raise ScenarioFailed(msg)
    directory = work / "upgrade-old-release"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    archive = directory / "program.tar"
    subprocess.run(
        ["git", "-C", str(REPO), "archive", "--output", str(archive), OLD_RELEASE, *PROGRAM_FILES],
        check=True,
        timeout=GIT_TIMEOUT_S,
    )
    subprocess.run(["tar", "-x", "-f", str(archive), "-C", str(directory)], check=True, timeout=GIT_TIMEOUT_S)
    archive.unlink()
    (directory / ".venv").symlink_to(REPO / ".venv")
    return directory


def pulumi_in(suite: Suite, directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [str(suite.tools["pulumi"].binary("pulumi")), *args, "--stack", STACK, "--non-interactive"]
    return suite.run([*argv, "--color=never"], timeout=PULUMI_TIMEOUT_S, cwd=directory)


def snapshot(suite: Suite) -> dict[str, Any]:
    """What must not change: each KService's and Configuration's generation, the Revisions by UID."""
    return {
        "kservices": {
            k["metadata"]["name"]: k["metadata"]["generation"]
            for k in suite.get(KSERVICES, namespace=NAMESPACE)["items"]
        },
        "configurations": {
            c["metadata"]["name"]: c["metadata"]["generation"]
            for c in suite.get(CONFIGURATIONS, namespace=NAMESPACE)["items"]
        },
        "revisions": {
            r["metadata"]["name"]: r["metadata"]["uid"]
            for r in suite.get(REVISIONS, namespace=NAMESPACE)["items"]
        },
    }


def test_upgrade(suite: Suite, knative_settings: Deployed, record: Record) -> None:
    """A stack of the previous release takes the new spec bytes in place."""
    old = old_program(suite.work)
    suite.write_stack(STACK, STACKS / "upgrade.yaml")
    shutil.copy(suite.stack_file(STACK), old / f"Pulumi.{STACK}.yaml")
    pulumi_in(suite, old, "stack", "init")
    pulumi_in(suite, old, "up", "--yes")
    before = snapshot(suite)
    check(sorted(before["kservices"]) == sorted(KSERVICE_NAMES), f"KServices: {before['kservices']}")
    old_specs = {
        k["metadata"]["name"]: k["metadata"]["annotations"][SPEC]
        for k in suite.get(KSERVICES, namespace=NAMESPACE)["items"]
    }

    shutil.copy(old / f"Pulumi.{STACK}.yaml", suite.stack_file(STACK))  # with the salt Pulumi wrote
    preview = json.loads(suite.pulumi("preview", "--json", stack=STACK).stdout)
    ops = {step["urn"].rsplit("::", 1)[-1]: step["op"] for step in preview.get("steps", [])}
    changing = {name: op for name, op in ops.items() if op in CHANGING_OPS}
    check(not changing, f"the upgrade would create, replace or delete: {changing}")
    updated = sorted(name for name, op in ops.items() if op == "update")
    check(
        updated
        == sorted(
            [
                *(f"{name}-kservice" for name in KSERVICE_NAMES),
                "paused-upgrade-development-reaper",
                "kubernetes",
            ]
        ),
        f"updates: {updated}",
    )
    suite.pulumi("up", "--yes", stack=STACK)
    after = snapshot(suite)
    check(after == before, f"generations or revisions changed:\n{before}\n{after}")
    live = suite.get(KSERVICES, namespace=NAMESPACE)["items"]
    changed = [
        k["metadata"]["name"]
        for k in live
        if k["metadata"]["annotations"][SPEC] != old_specs[k["metadata"]["name"]]
    ]
    check(sorted(changed) == sorted(KSERVICE_NAMES), f"spec annotations rewritten for {changed} only")
    suite.judge_specs(live)
    (reaper,) = suite.reapers(STACK)
    check(
        reaper.get("outputs", {}).get("deleted_revisions") == [],
        f"the reaper's update: {reaper.get('outputs')}",
    )
    suite.pulumi("preview", "--expect-no-changes", stack=STACK)
    suite.pulumi("destroy", "--yes", stack=STACK)
    suite.pulumi("stack", "rm", "--yes", stack=STACK)
    record(f"{len(KSERVICE_NAMES)} KServices updated in place, {len(after['revisions'])} revisions kept")
