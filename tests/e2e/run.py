"""`make e2e`: the real Pulumi engine against a real control plane with Knative, scenario by scenario.

The Pulumi CLI (with its Python language host and dynamic-provider host) and pulumi-resource-kubernetes
built by ``make e2e-tools`` run this repository's program on ``stacks/e2e.yaml`` against etcd,
kube-apiserver, kube-controller-manager and Knative Serving (``tests/e2e/cluster.py``), with a local
file backend, a test passphrase, no update checks and no plugin downloads. The whole run happens in a
network namespace of its own with only ``lo`` up (nothing can leave loopback), after the policy pack's
virtualenv is installed outside it (``pulumi install`` in ``policies/``, which needs PyPI).

Each scenario asserts what it says and prints PASS or FAIL with its time; a failure stops the run
(later scenarios build on earlier ones) and leaves the work directory for inspection.

    python -m tests.e2e.run [--work DIR] [--keep] [--until NAME]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml
from ruamel.yaml import YAML

from tests.e2e import build, cluster, compare
from tests.e2e.outcome import ScenarioFailed, check
from tests.e2e.package_scenarios import PYTHON_SDK, package_scenarios

REPO: Final = Path(__file__).resolve().parents[2]
STACKS: Final = Path(__file__).resolve().parent / "stacks"
POLICY_PACK: Final = REPO / "policies"
POLICY_STAMP: Final = POLICY_PACK / "venv" / ".flyte-apps-e2e"
PACKAGE_PLUGIN: Final = REPO / "components" / "plugin"
PACKAGE_STAMP: Final = PACKAGE_PLUGIN / "venv" / ".flyte-apps-e2e"
WHEELHOUSE: Final = "wheelhouse"
"""Under the tools' cache: the wheels `pulumi package add` needs offline (setuptools, to build flyte-apps
into the package's virtualenv, where every pin is already installed) and the Python consumer's."""
WHEELHOUSE_PINS: Final = ("setuptools>=68", "wheel", "pip", f"pulumi=={PYTHON_SDK}")
PROJECT_FILES: Final = ("Pulumi.yaml", "__main__.py", "components", "flyte_apps", ".venv")
INSIDE_MARKER: Final = "FLYTE_APPS_E2E_NETNS"
PASSPHRASE: Final = "flyte-apps-e2e"
KUBERNETES_PLUGIN: Final = "kubernetes"
MAIN_STACK: Final = "e2e"
NAMESPACE: Final = "flyte-e2e"
PULUMI_TIMEOUT_S: Final = 900.0
CLI_TIMEOUT_S: Final = 120.0
SETTLE_S: Final = 120.0
POLL_S: Final = 1.0
KSERVICES: Final = "services.serving.knative.dev"
REVISIONS: Final = "revisions.serving.knative.dev"
DOMAIN_MAPPINGS: Final = "domainmappings.serving.knative.dev"
CLAIMS: Final = "clusterdomainclaims.networking.internal.knative.dev"
LABEL_APP: Final = "flyte.org/app-name"
LABEL_SERVICE: Final = "serving.knative.dev/service"
LABEL_REVISION: Final = "serving.knative.dev/revision"


@dataclass
class Suite:
    """Everything the scenarios share: where things are, and how to run the tools."""

    work: Path
    plane: cluster.ControlPlane
    tools: Mapping[str, build.Built]
    env: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def project(self) -> Path:
        return self.work / "project"

    def stack_file(self, stack: str) -> Path:
        return self.project / f"Pulumi.{stack}.yaml"

    # -- commands -----------------------------------------------------------------------------------

    def run(
        self, argv: Sequence[str], *, timeout: float, cwd: Path | None = None, check_rc: bool = True
    ) -> subprocess.CompletedProcess[str]:
        try:
            done = subprocess.run(
                list(argv),
                cwd=cwd or self.project,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            raise ScenarioFailed(f"`{' '.join(argv[:4])}` ran past {timeout:.0f} s") from exc
        if check_rc and done.returncode != 0:
            output = done.stdout + done.stderr
            shown = diagnostics_of(output) or output.strip().splitlines()[-25:]
            raise ScenarioFailed(f"`{' '.join(argv[:4])}` exited {done.returncode}:\n" + "\n".join(shown))
        return done

    def pulumi(
        self, *args: str, stack: str = MAIN_STACK, check_rc: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return self.run(
            [
                str(self.tools["pulumi"].binary("pulumi")),
                *args,
                "--stack",
                stack,
                "--non-interactive",
                "--color=never",
            ],
            timeout=PULUMI_TIMEOUT_S,
            check_rc=check_rc,
        )

    def flyte_apps(
        self, *args: str, check_rc: bool = True, timeout: float = CLI_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        return self.run(
            [str(REPO / ".venv" / "bin" / "flyte-apps"), *args], timeout=timeout, check_rc=check_rc
        )

    def kubectl(
        self, *args: str, stdin: str | None = None, check_rc: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return self.plane.kubectl(*args, stdin=stdin, check=check_rc)

    def get(self, resource: str, name: str | None = None, namespace: str | None = NAMESPACE) -> Any:
        args = [resource, *([name] if name else []), *(["-n", namespace] if namespace else [])]
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def exists(self, resource: str, name: str, namespace: str | None = NAMESPACE) -> bool:
        args = [resource, name, *(["-n", namespace] if namespace else []), "--ignore-not-found", "-o", "name"]
        return bool(self.kubectl("get", *args).stdout.strip())

    def render(self, stack: str = MAIN_STACK) -> dict[str, Any]:
        out = self.flyte_apps("render", "--project-dir", str(self.project), "--stack", stack, "-o", "json")
        document: dict[str, Any] = json.loads(out.stdout)
        return document

    # -- the stack file -----------------------------------------------------------------------------

    def write_stack(self, stack: str, source: Path, *, kubeconfig: bool = True) -> None:
        """A stack file from ``stacks/``, pointed at this control plane's kubeconfig (unless a scenario
        sets it with `pulumi config set`)."""
        yaml = YAML()
        document = yaml.load(source.read_text())
        if kubeconfig:
            document["config"]["kubernetes:kubeconfig"] = str(self.plane.kubeconfig)
        with self.stack_file(stack).open("w") as out:
            yaml.dump(document, out)

    @contextlib.contextmanager
    def edit_stack(self, stack: str = MAIN_STACK) -> Iterator[Any]:
        """Round-trip edit of a stack file (keeps what Pulumi wrote into it, e.g. encryptionsalt)."""
        yaml = YAML()
        path = self.stack_file(stack)
        document = yaml.load(path.read_text())
        yield document
        with path.open("w") as out:
            yaml.dump(document, out)

    def app_entry(self, document: Any, name: str) -> Any:
        for app in document["config"]["flyte-apps:apps"]:
            if app["name"] == name:
                return app
        raise ScenarioFailed(f"no app {name!r} in the stack file")

    # -- the cluster --------------------------------------------------------------------------------

    def revisions(self, namespace: str = NAMESPACE) -> dict[str, str]:
        """Every Revision in the apps' namespace -> its KService."""
        items = self.get(REVISIONS, namespace=namespace)["items"]
        return {r["metadata"]["name"]: r["metadata"]["labels"].get(LABEL_SERVICE, "") for r in items}

    def live(self, rendered: Mapping[str, Any]) -> dict[str, Any] | None:
        metadata = rendered["metadata"]
        group = rendered["apiVersion"].split("/")[0] if "/" in rendered["apiVersion"] else ""
        resource = f"{rendered['kind'].lower()}s" + (f".{group}" if group else "")
        namespace = metadata.get("namespace")
        args = [
            resource,
            metadata["name"],
            *(["-n", namespace] if namespace else []),
            "--ignore-not-found",
            "-o",
            "json",
        ]
        out = self.kubectl("get", *args).stdout.strip()
        return json.loads(out) if out else None

    def compare_with_render(self, stack: str = MAIN_STACK, *, kinds: set[str] | None = None) -> int:
        """Every rendered object (of ``kinds``, or all) is live and equal to what render printed in
        every field we write; returns how many were compared."""
        document = self.render(stack)
        annotations = document["metadata"].get("annotations", {})
        patches = set(filter(None, annotations.get("flyte-apps/patches", "").split(",")))
        defaults = compare.load_defaults()
        problems = []
        items = [obj for obj in document["items"] if kinds is None or obj["kind"] in kinds]
        for obj in items:
            meta = obj["metadata"]
            key = "/".join(filter(None, (obj["kind"], meta.get("namespace"), meta["name"])))
            live = self.live(obj)
            if live is None:
                problems.append(f"{key}: not in the cluster")
                continue
            problems += [
                f"{key}: {d}" for d in compare.differences(obj, live, defaults, patch=key in patches)
            ]
        check(not problems, "live objects differ from `flyte-apps render`:\n  " + "\n  ".join(problems))
        return len(items)

    def wait(self, what: str, condition: Callable[[], bool], timeout: float = SETTLE_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(POLL_S)
        raise ScenarioFailed(f"{what}: not after {timeout:.0f} s")

    def revision_ready(self, name: str) -> bool:
        revision = self.get(REVISIONS, name)
        return any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in revision.get("status", {}).get("conditions", [])
        )

    def pods_labelled(self, label: str, value: str) -> list[str]:
        """The pods of the apps' namespace whose ``label`` is ``value`` (a revision's, a KService's)."""
        items = self.get("pods", namespace=NAMESPACE)["items"]
        return [p["metadata"]["name"] for p in items if p["metadata"].get("labels", {}).get(label) == value]

    def state_resources(self, stack: str = MAIN_STACK) -> list[dict[str, Any]]:
        exported = json.loads(self.pulumi("stack", "export", stack=stack).stdout)
        resources: list[dict[str, Any]] = exported.get("deployment", {}).get("resources") or []
        return resources


# -- scenarios ----------------------------------------------------------------------------------------


def diagnostics_of(output: str) -> list[str]:
    """The lines of the engine's "Diagnostics:" section (each message once; the progress lines above
    repeat them)."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "Diagnostics:"), len(lines))
    section = []
    for line in lines[start + 1 :]:
        if line and not line.startswith(" "):
            break
        section.append(line.strip())
    return section


def scenario_bad_stack(suite: Suite) -> str:
    """A stack file with mistakes: `pulumi preview` and `up` fail with our one-line errors, and nothing
    is registered."""
    suite.write_stack("bad", STACKS / "bad-config.yaml")
    suite.pulumi("stack", "init", stack="bad")
    # A secret where the program reads plain config: refused at its key, like the file's mistakes.
    suite.pulumi("config", "set", "--secret", "flyte-apps:domain", "development", stack="bad")
    for command in (("preview",), ("up", "--yes")):
        done = suite.pulumi(*command, stack="bad", check_rc=False)
        output = done.stdout + done.stderr
        check(done.returncode != 0, f"`pulumi {command[0]}` of a bad stack succeeded")
        diagnostics = diagnostics_of(output)
        for key in (
            "flyte-apps:apps[0].name",
            "flyte-apps:apps[1].container.resources.requests.memory",
            "flyte-apps:domain: encrypted (secure:) values are not supported",
        ):
            lines = [line for line in diagnostics if key in line]
            check(
                len(lines) == 1,
                f"`pulumi {command[0]}`: expected one diagnostic naming {key}, got {lines}\n{output}",
            )
        check(
            "nothing was registered" in output, f"`pulumi {command[0]}` does not say nothing was registered"
        )
        check("Traceback" not in output, f"`pulumi {command[0]}` printed a traceback:\n{output}")
    registered = [r["type"] for r in suite.state_resources("bad") if r["type"] != "pulumi:pulumi:Stack"]
    check(not registered, f"resources registered from a bad stack: {registered}")
    check(not suite.exists("namespaces", "flyte-bad", namespace=None), "namespace flyte-bad exists")
    return "preview and up refused, one line per problem, nothing registered"


def scenario_go_readers(suite: Suite) -> str:
    """Go's YAML readers, through the built kubectl: `render --out-dir` of the dev stack and of a stack
    of tricky strings reads back, object for object, as `kubectl apply` and kustomize read it; and
    tests/fixtures/go_yaml_vectors.json (what `make test` checks without kubectl) is what kubectl reads."""
    from flyte_apps.core.yamlout import dump_yaml
    from tests.vectors import go_yaml

    binary = suite.plane.binary("kubernetes", "kubectl")
    tricky_apps = [{"name": "tricky", "container": {"image": "nginx:1.27", "args": go_yaml.TRICKY}}]
    tricky = {"flyte-apps:project": "proj", "flyte-apps:domain": "dev", "flyte-apps:apps": tricky_apps}
    checked = 0
    with tempfile.TemporaryDirectory() as scratch:
        stack_file = Path(scratch) / "Pulumi.tricky.yaml"
        stack_file.write_text(dump_yaml({"config": tricky}), encoding="utf-8")
        for label, args in (
            ("dev", ["--stack", "dev", "--project-dir", str(REPO)]),
            ("tricky", ["--config", str(stack_file), "--project-dir", scratch]),
        ):
            out = Path(scratch) / label
            suite.flyte_apps("render", *args, "--out-dir", str(out))
            ours = [yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted(out.glob("*.yaml"))]
            for reader in (go_yaml.as_kubectl_apply_reads, go_yaml.as_kustomize_reads):
                read = reader(binary, out)
                check(
                    _by_identity(read) == _by_identity(ours),
                    f"{label}: {reader.__name__} reads other objects",
                )
            checked += len(ours)
    committed = json.loads(go_yaml.OUTPUT.read_text(encoding="utf-8"))
    check(go_yaml.readings(binary) == committed, f"{go_yaml.OUTPUT.name} is stale: run `make vectors`")
    return f"{checked} rendered objects read alike by kubectl apply and kustomize; the vectors hold"


def _by_identity(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in objects}


def scenario_policy(suite: Suite) -> str:
    """`pulumi preview --policy-pack policies` in the real analyzer: a stack that breaks mandatory rules
    fails, naming them."""
    suite.write_stack("policy", STACKS / "policy-violations.yaml")
    suite.pulumi("stack", "init", stack="policy")
    done = suite.pulumi("preview", "--policy-pack", str(POLICY_PACK), stack="policy", check_rc=False)
    output = done.stdout + done.stderr
    check(done.returncode != 0, f"preview with violations passed:\n{output}")
    for rule in ("no-privileged-pods", "request-timeout-within-knative-max"):
        check(rule in output, f"the analyzer's output does not name {rule}:\n{output}")
    check("mandatory" in output, f"the violations are not reported as mandatory:\n{output}")
    check(not suite.exists("namespaces", "flyte-policy", namespace=None), "a refused preview created objects")
    return "mandatory violations fail the preview, by rule name"


def scenario_up(suite: Suite) -> str:
    """`pulumi preview` (with the pack) then `up`; every live object equals `render` in every field we
    write."""
    suite.write_stack(MAIN_STACK, STACKS / "e2e.yaml", kubeconfig=False)
    suite.pulumi("stack", "init")
    suite.pulumi("config", "set", "kubernetes:kubeconfig", str(suite.plane.kubeconfig))
    preview = suite.pulumi("preview", "--policy-pack", str(POLICY_PACK))
    check("flyte-apps@v0.1.0" in preview.stdout, f"the policy pack did not run:\n{preview.stdout[-2000:]}")
    suite.pulumi("up", "--yes", "--policy-pack", str(POLICY_PACK))
    count = suite.compare_with_render()
    revisions = suite.revisions()
    kservices = {o["metadata"]["name"] for o in suite.get(KSERVICES)["items"]}
    check(set(revisions.values()) == kservices, f"a KService without a Revision: {kservices} vs {revisions}")
    return f"{count} objects equal to render; {len(revisions)} revisions"


def scenario_no_changes(suite: Suite) -> str:
    """Right after `up`: no change in preview or up, no new Revision, no KService generation bump."""
    before = suite.revisions()
    generations = {k["metadata"]["name"]: k["metadata"]["generation"] for k in suite.get(KSERVICES)["items"]}
    suite.pulumi("preview", "--expect-no-changes")
    suite.pulumi("up", "--yes", "--expect-no-changes")
    time.sleep(3)  # give Knative's controller a moment to react to an update, had there been one
    check(suite.revisions() == before, f"revisions changed: {before} -> {suite.revisions()}")
    after = {k["metadata"]["name"]: k["metadata"]["generation"] for k in suite.get(KSERVICES)["items"]}
    check(after == generations, f"KService generations changed: {generations} -> {after}")
    return f"no diff, {len(before)} revisions unchanged"


def scenario_image_change(suite: Suite) -> str:
    """One app's image changed: exactly one new Revision, of that app; every object still equals render."""
    before = suite.revisions()
    with suite.edit_stack() as document:
        app = suite.app_entry(document, "feature-store")
        app["container"]["image"] = "ghcr.io/example/feature-store:0.9.2"
    suite.pulumi("up", "--yes")
    target = "feature-store-ml-serving-production"
    suite.wait("the new revision", lambda: len(suite.revisions()) > len(before), 60)
    time.sleep(3)
    new = {name: svc for name, svc in suite.revisions().items() if name not in before}
    check(list(new.values()) == [target], f"new revisions: {new} (expected one of {target})")
    check(set(before) <= set(suite.revisions()), "a revision disappeared")
    suite.compare_with_render()
    return f"one new revision: {next(iter(new))}"


def scenario_refresh(suite: Suite) -> str:
    """`pulumi refresh --expect-no-changes`, then `preview --expect-no-changes`: no drift either way."""
    suite.pulumi("refresh", "--yes", "--expect-no-changes")
    suite.pulumi("preview", "--expect-no-changes")
    return "no drift"


def scenario_cluster_refusals(suite: Suite) -> str:
    """What `check` refuses in a pod (tolerations, node selectors) the real API server refuses too, and
    what it accepts the API server accepts: each case in a Pod, `--dry-run=server`; Knative's reserved
    env names in a KService, which its webhook must refuse. NUL bytes, which only the container
    runtime refuses, the API server must accept (so `check` is the only guard)."""
    from tests.cli.test_cluster_refusals import api_server_cases

    disagree: list[str] = []
    cases = api_server_cases()
    for name, case in sorted(cases.items()):
        container: dict[str, Any] = {"name": "app", "image": "nginx:1.27"}
        container.update({key: case.fragment[key] for key in ("args", "env") if key in case.fragment})
        spec: dict[str, Any] = {"containers": [container]}
        spec.update(
            {key: case.fragment[key] for key in ("tolerations", "nodeSelector") if key in case.fragment}
        )
        metadata = {"name": f"judge-{name}"[:40]}
        judged: dict[str, Any] = (
            {
                "apiVersion": "serving.knative.dev/v1",
                "kind": "Service",
                "metadata": metadata,
                "spec": {"template": {"spec": spec}},
            }
            if case.kservice
            else {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
        )
        done = suite.kubectl(
            "create", "--dry-run=server", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(judged), check_rc=False
        )
        if (done.returncode != 0) != case.refused:
            expected = "refusal" if case.refused else "acceptance"
            disagree.append(f"{name}: expected {expected}, the cluster: {done.stderr.strip() or 'accepted'}")
    check(not disagree, "; ".join(disagree))
    knative = sum(case.kservice for case in cases.values())
    return f"{len(cases) - knative} Pods and {knative} KServices, the cluster agrees on each"


def scenario_knative_knobs(suite: Suite) -> str:
    """Every `knative` setting vector of tests/cli/test_knative_knobs.py in a KService,
    `--dry-run=server`: Knative's webhook accepts exactly those `check` accepts."""
    from tests.cli.test_knative_knobs import ANNOTATION_OF, AUTOSCALING, KNOBS

    disagree: list[str] = []
    for index, knob in enumerate(KNOBS):
        annotations = {
            "autoscaling.knative.dev/min-scale": str(AUTOSCALING["minReplicas"]),
            "autoscaling.knative.dev/max-scale": str(AUTOSCALING["maxReplicas"]),
        }
        spec: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx:1.27"}]}
        if knob.key == "containerConcurrency":
            spec["containerConcurrency"] = knob.rendered
        else:
            annotations[ANNOTATION_OF[knob.key]] = str(knob.rendered)
        kservice = {
            "apiVersion": "serving.knative.dev/v1",
            "kind": "Service",
            "metadata": {"name": f"knob-{index}"},
            "spec": {"template": {"metadata": {"annotations": annotations}, "spec": spec}},
        }
        done = suite.kubectl(
            "create",
            "--dry-run=server",
            "-n",
            NAMESPACE,
            "-f",
            "-",
            stdin=json.dumps(kservice),
            check_rc=False,
        )
        if (done.returncode == 0) != knob.accepted:
            verdict = done.stderr.strip() or "accepted"
            disagree.append(
                f"{knob.key}={knob.value!r}: we {'accept' if knob.accepted else 'refuse'}; {verdict}"
            )
    check(not disagree, "; ".join(disagree))
    return f"{len(KNOBS)} knob vectors, Knative's webhook agrees on each"


def scenario_placement(suite: Suite) -> str:
    """The KServices `render` gives for Flyte's placement test cases (tests/core/test_gpus.py: device
    classes, partitions, unpartitioned rules, platform tolerations), `--dry-run=server`: the API
    server and Knative's webhook (with the stack's feature flags) accept every one."""
    from flyte_apps.core.plan import plan_stack
    from tests.core.test_gpus import placement_judge_configs

    refused: list[str] = []
    configs = placement_judge_configs()
    for index, (name, config) in enumerate(sorted(configs.items())):
        kservice = plan_stack(config).apps[0].kservice
        judged = {**kservice, "metadata": {"name": f"placed-{index}"}}
        done = suite.kubectl(
            "create", "--dry-run=server", "-n", NAMESPACE, "-f", "-", stdin=json.dumps(judged), check_rc=False
        )
        if done.returncode != 0:
            refused.append(f"{name}: {done.stderr.strip()}")
    check(not refused, "; ".join(refused))
    return f"{len(configs)} placed KServices, the cluster accepts each"


def scenario_stop_start(suite: Suite) -> str:
    """Stop an app: upstream's stop form, and the RevisionReaper (in the engine's own provider host)
    deletes every older revision with pods and keeps the stop revision. Then start it again."""
    kservice = "dashboard-flytesnacks-development"
    first = f"{kservice}-00001"
    suite.wait("the running revision's pods", lambda: bool(suite.pods_labelled(LABEL_REVISION, first)), 60)
    others = {name: svc for name, svc in suite.revisions().items() if svc != kservice}
    with suite.edit_stack() as document:
        suite.app_entry(document, "dashboard")["stopped"] = True
    suite.pulumi("up", "--yes")
    live = suite.get(KSERVICES, kservice)
    labels, template = live["metadata"]["labels"], live["spec"]["template"]["metadata"]["annotations"]
    check(labels.get("flyte.org/app-stopped") == "true", f"no stopped label: {labels}")
    check(labels.get("networking.knative.dev/visibility") == "cluster-local", f"not cluster-local: {labels}")
    check(
        template.get("autoscaling.knative.dev/min-scale") == "0"
        and template.get("autoscaling.knative.dev/initial-scale") == "0",
        f"not scaled to zero: {template}",
    )
    stop_revision = f"{kservice}-00002"
    check(suite.exists(REVISIONS, stop_revision), f"no stop revision {stop_revision}")
    check(suite.revision_ready(stop_revision), f"the stop revision {stop_revision} is not Ready")
    check(not suite.exists(REVISIONS, first), f"the revision with pods {first} was not deleted")
    remaining = {name: svc for name, svc in suite.revisions().items() if svc != kservice}
    check(remaining == others, f"other apps' revisions changed: {others} -> {remaining}")
    reaper = [
        r for r in suite.state_resources() if r["type"].endswith("RevisionReaper") and kservice in r["urn"]
    ]
    check(len(reaper) == 1, f"expected one reaper for {kservice} in the state, got {len(reaper)}")
    outputs = reaper[0].get("outputs", {})
    check(outputs.get("stop_revision") == stop_revision, f"reaper's stop revision: {outputs}")
    check(outputs.get("deleted_revisions") == [first], f"reaper deleted: {outputs.get('deleted_revisions')}")
    check(not suite.get(DOMAIN_MAPPINGS)["items"], "a stopped app still has DomainMappings")
    suite.compare_with_render()
    suite.pulumi("preview", "--expect-no-changes")

    with suite.edit_stack() as document:
        del suite.app_entry(document, "dashboard")["stopped"]
    suite.pulumi("up", "--yes")
    live = suite.get(KSERVICES, kservice)
    check("flyte.org/app-stopped" not in live["metadata"]["labels"], "still stopped after start")
    reapers = [
        r for r in suite.state_resources() if r["type"].endswith("RevisionReaper") and kservice in r["urn"]
    ]
    check(not reapers, "the reaper outlived the stop")
    suite.wait("the started revision", lambda: suite.exists(REVISIONS, f"{kservice}-00003"), 60)
    check(len(suite.get(DOMAIN_MAPPINGS)["items"]) == 2, "the DomainMappings did not come back")
    suite.compare_with_render()
    return f"stop kept {stop_revision}, deleted {first}; start made {kservice}-00003"


def scenario_secret_kubeconfig(suite: Suite) -> str:
    """A stack whose kubeconfig setting is a secret: pulumi-kubernetes and the RevisionReaper (in the
    engine's dynamic-provider host, where the input arrives secret-wrapped) reach this cluster, and
    the environment names none, so any fall-back would fail."""
    stack = "secret"
    suite.write_stack(stack, STACKS / "secret-kubeconfig.yaml", kubeconfig=False)
    suite.pulumi("stack", "init", stack=stack)
    suite.pulumi(
        "config", "set", "--secret", "kubernetes:kubeconfig", str(suite.plane.kubeconfig), stack=stack
    )
    check("secure:" in suite.stack_file(stack).read_text(), "the kubeconfig setting is not stored encrypted")
    suite.pulumi("up", "--yes", stack=stack)
    reapers = [r for r in suite.state_resources(stack) if r["type"].endswith("RevisionReaper")]
    check(len(reapers) == 1, f"expected one reaper, got {len(reapers)}")
    outputs = reapers[0].get("outputs", {})
    check(outputs.get("stop_revision") == "paused-e2e-development-00001", f"the reaper's outputs: {outputs}")
    check(
        str(suite.plane.kubeconfig) not in json.dumps(reapers[0].get("inputs", {})),
        "the path is in plain text",
    )
    suite.pulumi("destroy", "--yes", stack=stack)
    return "the reaper reached the cluster through the secret input"


def scenario_operate(suite: Suite) -> str:
    """`flyte-apps status`, `watch` and `logs` against the real API server say what is true."""
    common = ["--project-dir", str(suite.project), "--stack", MAIN_STACK]
    status = json.loads(suite.flyte_apps("status", *common, "-o", "json").stdout)
    apps = (
        {entry["app"]["metadata"]["id"]["name"]: entry for entry in status}
        if isinstance(status, list)
        else {}
    )
    check(len(apps) == 6, f"status lists {sorted(apps)} (expected the stack's 6 apps)")
    table = suite.flyte_apps("status", *common, "--exit-code").stdout
    check("STOPPED" in table and "notebook" in table, f"the stopped app is not STOPPED:\n{table}")
    watch = subprocess.Popen(
        [str(REPO / ".venv" / "bin" / "flyte-apps"), "watch", *common],
        cwd=suite.project,
        env=suite.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(8)
    watch.send_signal(signal.SIGINT)
    try:
        out, err = watch.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        watch.kill()
        raise ScenarioFailed("watch did not stop on Ctrl-C") from None
    check(watch.returncode in (0, 130), f"watch exited {watch.returncode}: {err[-1000:]}")
    check(
        all(name in out for name in ("dashboard", "notebook", "llm")), f"watch did not show every app:\n{out}"
    )
    check("Traceback" not in err, f"watch printed a traceback:\n{err}")
    model_api = "model-api-ml-serving-production"  # minReplicas 1: its pods exist, and no node takes them
    suite.wait(
        "model-api's pods",
        lambda: any(p.startswith(model_api) for p in suite.pods_labelled(LABEL_SERVICE, model_api)),
        60,
    )
    logs = suite.flyte_apps(
        "logs", "model-api", "-p", "ml-serving", "-d", "production", *common, check_rc=False
    )
    said = logs.stdout + logs.stderr
    check(logs.returncode == 0, f"logs exited {logs.returncode}: {said}")
    check("not scheduled to a node" in said, f"logs of an app whose pods never ran say: {said!r}")
    stopped = suite.flyte_apps("logs", "notebook", "-p", "flytesnacks", "-d", "development", *common)
    check("scaled to zero" in stopped.stdout + stopped.stderr, f"logs of a stopped app: {stopped.stderr!r}")
    return "status, watch and logs tell the truth"


ADOPT_STACK: Final = "adopt"
ADOPT_NAMESPACE: Final = "flyte-adopt"


def upstream_kservice_for(fixture: str, name: str) -> dict[str, Any]:
    """A KService as Flyte's app service creates it, from a spec Flyte's SDK wrote
    (``tests.support.upstream_kservice``, written from Flyte's Go code, not with our renderer)."""
    from tests.support.upstream_kservice import DataPlane, upstream_kservice

    data = json.loads((REPO / "tests" / "fixtures" / "sdk" / f"{fixture}.json").read_text())
    plane = DataPlane(
        namespace=ADOPT_NAMESPACE,
        default_env=(
            ("FLYTE_AWS_ENDPOINT", "http://rustfs-svc.flyte.svc.cluster.local:9000"),
            ("_U_INSECURE", "true"),
        ),
    )
    return upstream_kservice(data["spec_b64"], "adopted", "development", name, plane=plane)


def scenario_adopt(suite: Suite) -> str:
    """KServices created the way Flyte's app service creates them (one plain `kubectl create`) are taken
    over by `flyte-apps import` and `pulumi up`, as `adopt: true` (Pulumi's import) and `adopt: upsert`:
    the same UIDs, at most one new Revision, and no diff afterwards."""
    suite.kubectl("create", "namespace", ADOPT_NAMESPACE)
    exact = upstream_kservice_for("plain", "legacy")
    changed = upstream_kservice_for("gpu", "legacy-gpu")
    for manifest in (exact, changed):
        suite.kubectl("create", "-f", "-", stdin=json.dumps(manifest))
    names = [m["metadata"]["name"] for m in (exact, changed)]

    def first_revisions() -> bool:
        return all(suite.exists(REVISIONS, f"{n}-00001", ADOPT_NAMESPACE) for n in names)

    suite.wait("the running apps' revisions", first_revisions, 60)
    uids = {n: suite.get(KSERVICES, n, ADOPT_NAMESPACE)["metadata"]["uid"] for n in names}
    before = suite.revisions(ADOPT_NAMESPACE)
    suite.write_stack(ADOPT_STACK, STACKS / "adopt.yaml")
    suite.pulumi("stack", "init", stack=ADOPT_STACK)
    imported = suite.flyte_apps("import", "--project-dir", str(suite.project), "--stack", ADOPT_STACK)
    with suite.edit_stack(ADOPT_STACK) as document:
        adopt = {a["name"]: a.get("adopt") for a in document["config"]["flyte-apps:apps"]}
    check(
        adopt == {"handmade": None, "legacy": True, "legacy-gpu": "upsert"},
        f"import wrote adopt: {adopt}\n{imported.stdout}{imported.stderr}",
    )
    preview = suite.pulumi("preview", stack=ADOPT_STACK)
    check("1 to import" in preview.stdout, f"the exact app is not imported:\n{preview.stdout[-3000:]}")
    suite.pulumi("up", "--yes", stack=ADOPT_STACK)
    for name in names:
        uid = suite.get(KSERVICES, name, ADOPT_NAMESPACE)["metadata"]["uid"]
        check(uid == uids[name], f"{name} was re-created ({uids[name]} -> {uid})")
    time.sleep(3)
    after = suite.revisions(ADOPT_NAMESPACE)
    new = sorted(r for r in after if r not in before)
    check(not [r for r in new if r.startswith(names[0])], f"the exact adoption made a revision: {new}")
    check(
        len([r for r in new if r.startswith(names[1])]) <= 1, f"the upsert made more than one revision: {new}"
    )
    suite.pulumi("preview", "--expect-no-changes", stack=ADOPT_STACK)
    suite.compare_with_render(ADOPT_STACK)
    return f"adopted {', '.join(names)} with the same UIDs; new revisions: {new or 'none'}"


def scenario_destroy(suite: Suite) -> str:
    """`pulumi destroy`: every object the stack made is gone, except what the product keeps by design."""
    hosts = [c["metadata"]["name"] for c in suite.get(CLAIMS, namespace=None)["items"]]
    suite.pulumi("destroy", "--yes")
    left = [r["type"] for r in suite.state_resources()]
    check(not left, f"the state still holds {left}")
    check(
        not suite.exists("namespaces", NAMESPACE, namespace=None), f"namespace {NAMESPACE} outlived destroy"
    )
    claims = {c["metadata"]["name"] for c in suite.get(CLAIMS, namespace=None)["items"]}
    check(bool(hosts) and set(hosts) <= claims, f"ClusterDomainClaims were not kept: {hosts} -> {claims}")
    suite.pulumi("destroy", "--yes", stack=ADOPT_STACK)
    check(
        suite.exists("namespaces", ADOPT_NAMESPACE, namespace=None),
        f"the adopted namespace {ADOPT_NAMESPACE} was deleted",
    )
    left_over = [k["metadata"]["name"] for k in suite.get(KSERVICES, namespace=ADOPT_NAMESPACE)["items"]]
    check(not left_over, f"KServices outlived destroy: {left_over}")
    autoscaler = suite.get("configmaps", "config-autoscaler", namespace=cluster.KNATIVE_NAMESPACE)
    check(
        autoscaler["data"].get("allow-zero-initial-scale") == "true", "the Knative config patch was removed"
    )
    return f"everything gone but the kept claims {sorted(hosts)} and Knative's config keys"


SCENARIOS: Final[tuple[tuple[str, Callable[[Suite], str]], ...]] = (
    ("bad-stack", scenario_bad_stack),
    ("go-readers", scenario_go_readers),
    ("policy", scenario_policy),
    ("up", scenario_up),
    ("no-changes", scenario_no_changes),
    ("image-change", scenario_image_change),
    ("refresh", scenario_refresh),
    ("cluster-refusals", scenario_cluster_refusals),
    ("knative-knobs", scenario_knative_knobs),
    ("placement", scenario_placement),
    ("stop-start", scenario_stop_start),
    ("secret-kubeconfig", scenario_secret_kubeconfig),
    ("operate", scenario_operate),
    ("adopt", scenario_adopt),
    *package_scenarios(),
    ("destroy", scenario_destroy),
)


# -- set-up -------------------------------------------------------------------------------------------


def pulumi_environment(work: Path, tools: Mapping[str, build.Built]) -> dict[str, str]:
    path = os.pathsep.join(
        [str(tools["pulumi"].bin), str(REPO / ".venv" / "bin"), "/usr/sbin", "/usr/bin", "/bin"]
    )
    return cluster.clean_environment(
        {
            "PATH": path,
            "HOME": str(work / "home"),
            "PULUMI_HOME": str(work / "pulumi-home"),
            "PULUMI_BACKEND_URL": f"file://{work / 'state'}",
            "PULUMI_CONFIG_PASSPHRASE": PASSPHRASE,
            "PULUMI_SKIP_UPDATE_CHECK": "true",
            "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
            "PULUMI_IGNORE_AMBIENT_PLUGINS": "true",
            "PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK": "true",
            "NO_COLOR": "1",
            "COLUMNS": "200",
        }
    )


def link_project(directory: Path) -> None:
    """A project directory of its own (the stack files Pulumi writes stay out of the checkout), made
    of links to this repository's Pulumi.yaml, program and virtualenv."""
    directory.mkdir(parents=True)
    for name in PROJECT_FILES:
        (directory / name).symlink_to(REPO / name)


def install_kubernetes_plugin(tools: Mapping[str, build.Built], env: Mapping[str, str]) -> None:
    """The built pulumi-resource-kubernetes, installed under the version it was built as."""
    provider = tools["kubernetes-provider"]
    argv = [str(tools["pulumi"].binary("pulumi")), "plugin", "install", "resource", KUBERNETES_PLUGIN]
    argv += [f"v{provider.tool.plugin_version}", "--file", str(provider.binary("pulumi-resource-kubernetes"))]
    done = subprocess.run(
        argv, env=dict(env), capture_output=True, text=True, timeout=CLI_TIMEOUT_S, check=False
    )
    if done.returncode != 0:
        raise build.ToolError(f"pulumi plugin install failed: {(done.stdout + done.stderr).strip()[-2000:]}")


def prepare_project(suite: Suite) -> None:
    """The project directory, the Pulumi home, backend and HOME, the kubernetes plugin."""
    link_project(suite.project)
    for name in ("home", "pulumi-home", "state"):
        (suite.work / name).mkdir()
    install_kubernetes_plugin(suite.tools, suite.env)


def policy_pack_inputs() -> str:
    digest = hashlib.sha256()
    for path in (POLICY_PACK / "requirements.txt", REPO / "requirements.lock", REPO / "pyproject.toml"):
        digest.update(path.read_bytes())
    return digest.hexdigest()


def install_policy_pack(tools: Mapping[str, build.Built]) -> None:
    """`pulumi install` in policies/ (its virtualenv, from PyPI), unless done for these inputs already."""
    if POLICY_STAMP.is_file() and POLICY_STAMP.read_text() == policy_pack_inputs():
        return
    print("e2e: installing the policy pack's virtualenv (pulumi install in policies/)", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="flyte-apps-e2e-install-") as home:
        env = pulumi_environment(Path(home), tools)
        env["PATH"] = os.pathsep.join([str(tools["pulumi"].bin), os.environ.get("PATH", "")])
        for proxy in cluster.PROXY_VARIABLES:  # pip may need the caller's proxy here
            for name in (proxy, proxy.lower()):
                if name in os.environ:
                    env[name] = os.environ[name]
        (Path(home) / "pulumi-home").mkdir()
        done = subprocess.run(
            [str(tools["pulumi"].binary("pulumi")), "install", "--non-interactive"],
            cwd=POLICY_PACK,
            env=env,
            capture_output=True,
            text=True,
            timeout=1200,
        )
    if done.returncode != 0:
        raise build.ToolError(f"pulumi install in policies/ failed:\n{(done.stdout + done.stderr)[-3000:]}")
    POLICY_STAMP.write_text(policy_pack_inputs())


def package_inputs_digest() -> str:
    digest = hashlib.sha256()
    for path in (PACKAGE_PLUGIN / "requirements.txt", REPO / "requirements.lock", REPO / "pyproject.toml"):
        digest.update(path.read_bytes())
    digest.update(repr(WHEELHOUSE_PINS).encode())
    return digest.hexdigest()


def install_package_venv() -> None:
    """The component package's virtualenv with the repository's pins (from PyPI), and a wheelhouse with
    the build backend, unless done for these inputs already: inside the network namespace `pulumi package
    add` installs from them alone (``offline_pip``)."""
    wheelhouse = build.cache_root() / WHEELHOUSE
    if (
        PACKAGE_STAMP.is_file()
        and PACKAGE_STAMP.read_text() == package_inputs_digest()
        and wheelhouse.is_dir()
    ):
        return
    print("e2e: installing the component package's virtualenv (components/plugin/venv)", file=sys.stderr)
    venv = PACKAGE_PLUGIN / "venv"
    steps = [
        [sys.executable, "-m", "venv", str(venv)],
        [str(venv / "bin" / "pip"), "install", "--quiet", "-r", "requirements.txt"],
        # The build backend, and what a Python consumer's virtualenv needs (the SDK's install upgrades
        # pip, setuptools and wheel first).
        [
            str(venv / "bin" / "pip"),
            "download",
            "--quiet",
            "--dest",
            str(wheelhouse),
            *WHEELHOUSE_PINS,
        ],
    ]
    for argv in steps:
        done = subprocess.run(
            argv, cwd=PACKAGE_PLUGIN, capture_output=True, text=True, timeout=1200, check=False
        )
        if done.returncode != 0:
            raise build.ToolError(f"{' '.join(argv[:3])} failed:\n{(done.stdout + done.stderr)[-3000:]}")
    unpinned = unpinned_packages(venv)
    if unpinned:
        raise build.ToolError(
            f"the package's virtualenv holds versions requirements.lock does not pin: {unpinned}"
        )
    PACKAGE_STAMP.write_text(package_inputs_digest())


def unpinned_packages(venv: Path) -> list[str]:
    """What ``venv`` holds that ``requirements.lock`` does not pin at that version (flyte-apps aside):
    the package's requirements.txt takes the lock as constraints, so this must be empty."""

    def key(name: str) -> str:
        return name.lower().replace("_", "-")

    pins = {}
    for line in (REPO / "requirements.lock").read_text().splitlines():
        requirement = line.split("#", 1)[0].strip()
        if "==" in requirement:
            name, version = requirement.split("==", 1)
            pins[key(name)] = version.strip()
    frozen = subprocess.run(
        [str(venv / "bin" / "pip"), "freeze", "--exclude", "flyte-apps"],
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=True,
    ).stdout.split()
    return [entry for entry in frozen if pins.get(key(entry.split("==")[0])) != entry.split("==")[-1]]


def offline_pip() -> dict[str, str]:
    """pip without an index: the package's pins are installed, its build backend is in the wheelhouse."""
    return {
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(build.cache_root() / WHEELHOUSE),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


def consumers_environment(work: Path, tools: Mapping[str, build.Built]) -> dict[str, str]:
    """The scenarios' environment: ``pulumi_environment``, with pip, npm and Go offline on what was
    installed and cached beforehand, and node and go on PATH (the consumer programs' toolchains)."""
    env = {**pulumi_environment(work, tools), **offline_pip()}
    env.update(
        build.consumer_environment([t for t in tools.values() if t.tool.kind in build.CONSUMER_KINDS], work)
    )
    env.update(offline_pip())  # after: consumer_environment sets PIP_NO_INDEX alone
    toolchains = [str(Path(found).parent) for found in map(shutil.which, ("node", "go")) if found]
    env["PATH"] = os.pathsep.join([env["PATH"], *dict.fromkeys(toolchains)])
    return env


def reexec_in_network_namespace(argv: Sequence[str]) -> int:
    """Run this module again inside a network namespace of its own (only ``lo``, brought up inside)."""
    prefix = cluster.network_namespace_prefix()
    env = {**os.environ, INSIDE_MARKER: "1"}
    inner = 'ip link set lo up && exec "$0" -m tests.e2e.run "$@"'
    return subprocess.run(
        [*prefix, "sh", "-c", inner, sys.executable, *argv], env=env, cwd=REPO, check=False
    ).returncode


def run_scenarios(work: Path, until: str | None, only: Sequence[str] = ()) -> int:
    tools = build.locate()
    started = time.monotonic()
    results: list[tuple[str, str, float, str]] = []
    plane = cluster.ControlPlane(work / "cluster", tools)
    print(f"e2e: starting the control plane in {plane.workdir}", flush=True)
    plane.up()
    print(f"e2e: control plane ready in {time.monotonic() - started:.0f} s", flush=True)
    try:
        suite = Suite(work, plane, tools, consumers_environment(work, tools))
        prepare_project(suite)
        for name, scenario in SCENARIOS:
            if only and name not in only:
                continue
            began = time.monotonic()
            try:
                detail = scenario(suite)
                outcome = "PASS"
            except ScenarioFailed as exc:
                detail, outcome = str(exc), "FAIL"
            took = time.monotonic() - began
            results.append((name, outcome, took, detail))
            print(
                f"e2e: {outcome}  {name:<13} {took:6.1f} s  {detail if outcome == 'PASS' else ''}",
                flush=True,
            )
            if outcome == "FAIL":
                print("      " + detail.replace("\n", "\n      "), flush=True)
                break
            if name == until:
                break
    finally:
        plane.down()
    failed = [r for r in results if r[1] == "FAIL"]
    total = time.monotonic() - started
    print(
        f"e2e: {len(results) - len(failed)} passed, {len(failed)} failed, in {total / 60:.1f} min", flush=True
    )
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, help="work directory (default: a new temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory after a passing run")
    parser.add_argument("--no-netns", action="store_true", help="run on the host's loopback instead")
    parser.add_argument("--until", help="stop after this scenario (each builds on the ones before it)")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help="run only this scenario (repeatable; for those that need none before them, e.g. package-*)",
    )
    args = parser.parse_args(argv)
    unknown = [name for name in args.only if name not in dict(SCENARIOS)]
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}")
    if args.until and args.until not in dict(SCENARIOS):
        parser.error(f"unknown scenario {args.until!r}; there are {', '.join(n for n, _ in SCENARIOS)}")
    try:
        tools = build.locate()
        if os.environ.get(INSIDE_MARKER) != "1":
            install_policy_pack(tools)
            install_package_venv()
            if not args.no_netns:
                return reexec_in_network_namespace(argv)
        work = args.work or Path(tempfile.mkdtemp(prefix="flyte-apps-e2e-"))
        work.mkdir(parents=True, exist_ok=True)
        code = run_scenarios(work.resolve(), args.until, args.only)
    except (build.ToolError, cluster.ClusterError) as exc:
        print(f"e2e: {exc}", file=sys.stderr)
        return 1
    if code == 0 and not args.keep and args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"e2e: work directory kept: {work}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
