"""What the scenarios share: the project directory, the environment the tools run in, and the commands
(``pulumi``, ``flyte-apps``, ``kubectl``) with what scenarios read from the cluster and the state.

The project directory is the work directory's own (links to this repository's ``Pulumi.yaml``,
program and ``.venv``, so the stack files Pulumi writes stay out of the checkout), with a file backend,
a test passphrase, no update checks and no plugin downloads; its stack files are ``stacks/*.yaml`` with
the control plane's kubeconfig added. Every command is bounded and runs in a session of its own
(``run_bounded``), so a timeout or a Ctrl-C stops the plugins a Pulumi CLI started too.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from ruamel.yaml import YAML

from tests.e2e import build, cluster, compare
from tests.e2e.outcome import ScenarioFailed, check
from tests.e2e.scenarios.environment import consumers_environment
from tests.support import spec_judge

REPO: Final = Path(__file__).resolve().parents[3]
STACKS: Final = REPO / "tests" / "e2e" / "stacks"
POLICY_PACK: Final = REPO / "policies"
FLYTE_APPS: Final = REPO / ".venv" / "bin" / "flyte-apps"
PROJECT_FILES: Final = ("Pulumi.yaml", "__main__.py", "components", "flyte_apps", ".venv")
NETNS_MARKER: Final = "FLYTE_APPS_E2E_NETNS"
"""Set by ``python -m tests.e2e.run`` in the network namespace it made (the scenarios refuse to run
outside one unless told ``--no-netns``)."""
KUBERNETES_PLUGIN: Final = "kubernetes"
MAIN_STACK: Final = "e2e"
NAMESPACE: Final = "flyte-e2e"
PULUMI_TIMEOUT_S: Final = 900.0
INTERRUPT_S: Final = 30.0
DUMP_S: Final = 10.0
"""How long a command that outlived its Ctrl-C gets to print its threads' stacks (SIGABRT)."""
ENV_FAULTHANDLER: Final = "PYTHONFAULTHANDLER"
"""Set for the running `flyte-apps` commands: on SIGABRT, Python prints every thread's stack."""
"""How long a `watch` or `logs -f` may take to end on Ctrl-C."""
CLI_TIMEOUT_S: Final = 120.0
SETTLE_S: Final = 120.0
POLL_S: Final = 1.0
ARGS_SHOWN: Final = 4
"""How much of a failed command's argv its error repeats."""
OUTPUT_LINES_SHOWN: Final = 25
PLUGIN_ERROR_CHARS: Final = 2000
KSERVICES: Final = "services.serving.knative.dev"
REVISIONS: Final = "revisions.serving.knative.dev"
DOMAIN_MAPPINGS: Final = "domainmappings.serving.knative.dev"
CLAIMS: Final = "clusterdomainclaims.networking.internal.knative.dev"
LABEL_SERVICE: Final = "serving.knative.dev/service"
LABEL_REVISION: Final = "serving.knative.dev/revision"
PATCHES_ANNOTATION: Final = "flyte-apps/patches"
KSERVICE_KIND: Final = "Service"
SPEC_JUDGE: Final = "spec-judge"
"""On ``render -o json``'s List: the objects that are patches of objects someone else owns."""


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


def run_command(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    timeout: float,
    check_rc: bool = True,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``argv``, bounded; ScenarioFailed (with the engine's diagnostics, or the output's end) when it
    runs past ``timeout`` or, with ``check_rc``, exits non-zero."""
    shown = " ".join(argv[:ARGS_SHOWN])
    try:
        done = cluster.run_bounded(argv, timeout=timeout, cwd=cwd, env=env, stdin=stdin)
    except subprocess.TimeoutExpired as exc:
        raise ScenarioFailed(f"`{shown}` ran past {timeout:.0f} s") from exc
    if check_rc and done.returncode != 0:
        output = done.stdout + done.stderr
        said = diagnostics_of(output) or output.strip().splitlines()[-OUTPUT_LINES_SHOWN:]
        raise ScenarioFailed(f"`{shown}` exited {done.returncode}:\n" + "\n".join(said))
    return done


@dataclass
class Interrupted:
    """A command ``Suite.flyte_apps_running`` ran: its stdout's file, then its exit and stderr."""

    output: Path
    returncode: int | None = None
    stderr: str = ""

    @property
    def stdout(self) -> str:
        return self.output.read_text()


@dataclass(frozen=True)
class Background:
    """A `pulumi` command running in the background (``Suite.background_pulumi``)."""

    process: subprocess.Popen[str]
    output: Path
    args: tuple[str, ...]


@dataclass
class Suite:
    """The project directory on one control plane, and how to run the tools against it."""

    work: Path
    plane: cluster.ControlPlane
    tools: Mapping[str, build.Built]
    env: dict[str, str]

    @property
    def project(self) -> Path:
        return self.work / "project"

    def stack_file(self, stack: str) -> Path:
        return self.project / f"Pulumi.{stack}.yaml"

    # -- commands -----------------------------------------------------------------------------------

    def run(
        self, argv: Sequence[str], *, timeout: float, cwd: Path | None = None, check_rc: bool = True
    ) -> subprocess.CompletedProcess[str]:
        return run_command(argv, env=self.env, cwd=cwd or self.project, timeout=timeout, check_rc=check_rc)

    def pulumi(
        self, *args: str, stack: str = MAIN_STACK, check_rc: bool = True
    ) -> subprocess.CompletedProcess[str]:
        argv = [str(self.tools["pulumi"].binary("pulumi")), *args, "--stack", stack]
        return self.run(
            [*argv, "--non-interactive", "--color=never"], timeout=PULUMI_TIMEOUT_S, check_rc=check_rc
        )

    def background_pulumi(self, *args: str, stack: str = MAIN_STACK) -> Background:
        """`pulumi` started, not waited for (a scenario watches the cluster meanwhile): ``finish`` it."""
        output = self.work / f"pulumi-{stack}-{time.monotonic_ns()}.out"
        argv = [str(self.tools["pulumi"].binary("pulumi")), *args, "--stack", stack, "--non-interactive"]
        with output.open("w") as out:
            process = self._started(argv, stdout=out, stderr=subprocess.STDOUT)
        return Background(process, output, args)

    def _started(
        self, argv: Sequence[str], *, stdout: IO[str], stderr: int, env: Mapping[str, str] | None = None
    ) -> subprocess.Popen[str]:
        """``argv`` started in the project with the suite's environment (and ``env``), in a session of
        its own (stopped with it, whatever ends the scenario)."""
        return subprocess.Popen(
            list(argv),
            cwd=self.project,
            env={**self.env, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )

    def finish(self, background: Background) -> str:
        """Wait (bounded) for a background `pulumi`; its output, or ScenarioFailed with its diagnostics."""
        try:
            background.process.wait(timeout=PULUMI_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            cluster.stop_group(background.process)
            raise ScenarioFailed(
                f"`pulumi {' '.join(background.args[:2])}` ran past {PULUMI_TIMEOUT_S:.0f} s"
            ) from None
        output = background.output.read_text()
        if background.process.returncode != 0:
            shown = diagnostics_of(output) or output.strip().splitlines()[-OUTPUT_LINES_SHOWN:]
            raise ScenarioFailed(
                f"`pulumi {' '.join(background.args[:2])}` exited {background.process.returncode}:\n"
                + "\n".join(shown)
            )
        return output

    @contextlib.contextmanager
    def flyte_apps_running(self, *args: str, output: Path) -> Iterator[Interrupted]:
        """`flyte-apps <args>` (a `watch`, a `logs -f`) running while the block does, its stdout in
        ``output``; when the block ends it gets Ctrl-C, as a user would stop it, and must end within
        ``INTERRUPT_S``: its exit code and stderr are then in what the block was given; if it does not,
        SIGABRT makes it print its threads' stacks (``ENV_FAULTHANDLER``), shown in the failure.
        Whatever ends the block, the command is stopped (its session)."""
        with output.open("w") as out:
            process = self._started(
                [str(FLYTE_APPS), *args], stdout=out, stderr=subprocess.PIPE, env={ENV_FAULTHANDLER: "1"}
            )
        done = Interrupted(output)
        try:
            yield done
            process.send_signal(signal.SIGINT)
            try:
                _, done.stderr = process.communicate(timeout=INTERRUPT_S)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGABRT)
                try:
                    _, said = process.communicate(timeout=DUMP_S)
                except subprocess.TimeoutExpired:
                    said = "(no stacks: it outlived SIGABRT too)"
                raise ScenarioFailed(
                    f"`flyte-apps {' '.join(args[:2])}` did not stop on Ctrl-C; its threads then:\n"
                    + "\n".join(said.splitlines()[-OUTPUT_LINES_SHOWN * 2 :])
                ) from None
            done.returncode = process.returncode
        finally:
            if process.poll() is None:
                cluster.stop_group(process)

    def flyte_apps(
        self, *args: str, check_rc: bool = True, timeout: float = CLI_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        return self.run([str(FLYTE_APPS), *args], timeout=timeout, check_rc=check_rc)

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
        patches = set(filter(None, annotations.get(PATCHES_ANNOTATION, "").split(",")))
        defaults = compare.load_defaults()
        problems = []
        kservices: list[dict[str, Any]] = []
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
            if obj["kind"] == KSERVICE_KIND:
                kservices.append(live)
        check(not problems, "live objects differ from `flyte-apps render`:\n  " + "\n  ".join(problems))
        self.judge_specs(kservices)
        return len(items)

    def judge_specs(self, kservices: Sequence[Mapping[str, Any]]) -> None:
        """Every live KService's ``flyte.org/spec`` is protobuf-go's bytes for its spec, as Flyte's app
        service writes them (``tests/support/spec_judge.py``), and its spec-sha theirs."""
        binary = self.tools[SPEC_JUDGE].binary(SPEC_JUDGE)
        wrong = spec_judge.misjudged(binary, kservices, self.work)
        check(not wrong, "spec annotations Flyte would write otherwise:\n  " + "\n  ".join(wrong))

    def first_deploy_ground(self, namespace: str) -> None:
        """What a first deploy starts from on a user's cluster: Knative as installed, nothing of any
        stack's settings in it, and the apps' namespace already there, as Flyte makes it."""
        self.plane.reset_knative_config()
        if not self.exists("namespaces", namespace, namespace=None):
            self.kubectl("create", "namespace", namespace)

    def wait(self, what: str, condition: Callable[[], bool], timeout: float = SETTLE_S) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(POLL_S)
        raise ScenarioFailed(f"{what}: not after {timeout:.0f} s")

    def revision_ready(self, name: str, namespace: str = NAMESPACE) -> bool:
        revision = self.get(REVISIONS, name, namespace=namespace)
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

    def pending_creates(self, stack: str = MAIN_STACK) -> list[str]:
        """The URNs of the creates an interrupted update left pending in the stack's state."""
        exported = json.loads(self.pulumi("stack", "export", stack=stack).stdout)
        pending = exported.get("deployment", {}).get("pending_operations") or []
        return sorted(op["resource"]["urn"] for op in pending if op.get("type") == "creating")

    def reapers(self, stack: str = MAIN_STACK, kservice: str = "") -> list[dict[str, Any]]:
        """The stack's RevisionReapers in the state (those of ``kservice``, when named)."""
        return [
            r
            for r in self.state_resources(stack)
            if r["type"].endswith("RevisionReaper") and kservice in r["urn"]
        ]


# -- set-up -------------------------------------------------------------------------------------------


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
    try:
        done = cluster.run_bounded(argv, timeout=CLI_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired as exc:
        raise build.ToolError(f"pulumi plugin install ran past {CLI_TIMEOUT_S:.0f} s") from exc
    if done.returncode != 0:
        said = (done.stdout + done.stderr).strip()[-PLUGIN_ERROR_CHARS:]
        raise build.ToolError(f"pulumi plugin install failed: {said}")


def prepare_project(work: Path, plane: cluster.ControlPlane, tools: Mapping[str, build.Built]) -> Suite:
    """The project directory, the Pulumi home, backend and HOME, the kubernetes plugin."""
    suite = Suite(work, plane, tools, consumers_environment(work, tools))
    link_project(suite.project)
    for name in ("home", "pulumi-home", "state"):
        (work / name).mkdir()
    install_kubernetes_plugin(tools, suite.env)
    return suite
