"""Requests and log lines across a fault (issue 40): while a fault scenario runs, a client sends the
apps that must serve a request every ``INTERVAL_S`` (to each in turn, through the ingress, one try
each) that makes the replica answering it write one numbered line (the test app's ``/control/log``),
and a `flyte-apps logs -f --tail 0` of each app runs throughout. The scenario says when its fault
begins and when it is repaired; the probe counts the requests that failed before, during and after,
and the lines of answered requests that no `logs -f` printed. After the repair every app gets at least
``AFTER_ROUNDS`` requests, and none may fail; no line may be lost."""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

from tests.e2e.outcome import ScenarioFailed, check
from tests.e2e.scenarios.running import log_path, one_try, public_host, wait_ready
from tests.e2e.scenarios.suite import Interrupted, Suite

INTERVAL_S: Final = 0.5
"""One request every half second, the apps in turn: a fault of a minute sees about 40 per app."""
REQUEST_TIMEOUT_S: Final = 5.0
AFTER_ROUNDS: Final = 5
"""Requests each app gets after the repair (none may fail)."""
AFTER_S: Final = 60.0
"""The longest the after-repair requests may take (``AFTER_ROUNDS`` apps' requests, paced)."""
FOLLOW_S: Final = 60.0
"""How long `logs -f` may take to attach, and its last lines to show after the last request."""
BEFORE: Final = "before"
DURING: Final = "during"
AFTER: Final = "after"
PHASES: Final = (BEFORE, DURING, AFTER)
LINE_RE: Final = re.compile(r"\bprobe-([a-z0-9-]+)-(\d+) 1$", re.MULTILINE)
SHOWN: Final = 3


@dataclass(frozen=True)
class Sent:
    phase: str
    app: str
    seq: int
    failure: str
    """"" when the app answered 200 (its replica wrote the line), else what went wrong."""


@dataclass
class Probe:
    """Started by :func:`probing`; ``fault()`` and ``repaired()`` move it from phase to phase."""

    suite: Suite
    hosts: dict[str, str]
    """Each probed app -> its public host."""
    logs: dict[str, Interrupted]
    sent: list[Sent] = field(default_factory=list)
    phase: str = BEFORE
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    def fault(self) -> None:
        """The fault begins now: requests from here count as during it."""
        self.phase = DURING

    def repaired(self) -> None:
        """The repair converged: requests from here count as after it, and must all succeed."""
        self.phase = AFTER

    def client(self) -> None:
        apps = sorted(self.hosts)
        seq = 0
        while not self.stop.is_set():
            app = apps[seq % len(apps)]
            phase = self.phase
            began = time.monotonic()
            failure = one_try(self.suite, self.hosts[app], REQUEST_TIMEOUT_S, log_path(f"probe-{app}-{seq}"))
            with self.lock:
                self.sent.append(Sent(phase, app, seq, failure))
            seq += 1
            self.stop.wait(max(0.0, began + INTERVAL_S - time.monotonic()))

    def of(self, phase: str) -> list[Sent]:
        with self.lock:
            return [s for s in self.sent if s.phase == phase]

    def enough_after(self) -> bool:
        after = self.of(AFTER)
        return all(sum(s.app == app for s in after) >= AFTER_ROUNDS for app in self.hosts)

    def missing_lines(self) -> dict[str, list[int]]:
        """Each app -> the numbers of its answered requests whose line no `logs -f` printed."""
        with self.lock:
            answered = [s for s in self.sent if not s.failure]
        seen: dict[str, set[int]] = {}
        for app, following in self.logs.items():
            seen[app] = {int(m.group(2)) for m in LINE_RE.finditer(following.stdout) if m.group(1) == app}
        missing: dict[str, list[int]] = {}
        for sent in answered:
            if sent.seq not in seen[sent.app]:
                missing.setdefault(sent.app, []).append(sent.seq)
        return missing

    def summary(self) -> str:
        """``requests failed before 0/12, during 3/80, after 0/15; 104 lines, 0 lost`` (for the record)."""
        counts = []
        for phase in PHASES:
            sent = self.of(phase)
            counts.append(f"{phase} {sum(bool(s.failure) for s in sent)}/{len(sent)}")
        with self.lock:
            lines = sum(not s.failure for s in self.sent)
        lost = sum(len(seqs) for seqs in self.missing_lines().values())
        return f"requests failed {', '.join(counts)}; {lines} log lines, {lost} lost"


def attached(suite: Suite, probe: Probe) -> bool:
    """One marked line written to each app; true once every `logs -f` has printed its app's."""
    for app, host in probe.hosts.items():
        one_try(suite, host, REQUEST_TIMEOUT_S, log_path(f"attached-{app}"))
    return all(f"attached-{app} 1" in probe.logs[app].stdout for app in probe.hosts)


@contextlib.contextmanager
def probing(suite: Suite, stack: str, kservices: Mapping[str, str], namespace: str) -> Iterator[Probe]:
    """The apps of ``kservices`` (stack name -> KService) probed while the block runs: each waited for
    until Knative says it is Ready, `logs -f` of each attached, then the client started. When the block
    ends (it must have called ``repaired``), the client runs until each app has had ``AFTER_ROUNDS``
    requests after the repair, then stops; the scenario fails if a request after the repair failed or an
    answered line was lost."""
    common = ["--project-dir", str(suite.project), "--stack", stack]
    # Each app once Knative says it serves (bounded): a stack just deployed has KServices that Knative
    # has not reconciled yet (pulumi-kubernetes does not await a custom resource, so `up` returns once
    # the API server has them), without the URL its host comes from (seen once: a KeyError, no probe).
    hosts = {app: public_host(wait_ready(suite, name, namespace)) for app, name in kservices.items()}
    apps = sorted(hosts)
    with contextlib.ExitStack() as running:
        logs = {
            app: running.enter_context(
                suite.flyte_apps_running(
                    "logs", app, "-f", "--tail", "0", *common,
                    output=suite.work / f"probe-{stack}-{app}-{time.monotonic_ns()}.out",
                )
            )
            for app in apps
        }  # fmt: skip
        probe = Probe(suite, hosts, logs)
        suite.wait(f"`logs -f` of {', '.join(apps)} attached", lambda: attached(suite, probe), FOLLOW_S)
        thread = threading.Thread(target=probe.client, name="probe", daemon=True)
        thread.start()
        try:
            yield probe
            if probe.phase != AFTER:
                raise ScenarioFailed("the scenario ended its probe without saying it was repaired")
            suite.wait(
                f"{AFTER_ROUNDS} requests to each probed app after the repair", probe.enough_after, AFTER_S
            )
        finally:
            probe.stop.set()
            thread.join(REQUEST_TIMEOUT_S + INTERVAL_S * 2)
        check(not thread.is_alive(), "the probe's client did not stop")
        with contextlib.suppress(ScenarioFailed):
            suite.wait(
                "every answered request's line in `logs -f`", lambda: not probe.missing_lines(), FOLLOW_S
            )
    failed_after = [s.failure for s in probe.of(AFTER) if s.failure]
    check(not failed_after, f"{len(failed_after)} requests failed after the repair: {failed_after[:SHOWN]}")
    missing = probe.missing_lines()
    check(
        not missing,
        "lines of answered requests that `logs -f` did not print: "
        + "; ".join(f"{app}: {len(seqs)} (e.g. {seqs[:SHOWN]})" for app, seqs in missing.items()),
    )
