"""Where a `pulumi` command's seconds go, from the engine's own trace::

    pulumi up --yes --otel-traces file:///tmp/up.jsonl ...   # the CLI writes OpenTelemetry JSON lines
    python -m bench.trace /tmp/up.jsonl [/tmp/other.jsonl ...]

The CLI built by ``make e2e-tools`` (v3.274.1) has no ``--event-log``; its ``--otel-traces`` spans
cover the program's runs (``LanguageRuntime/Run``), each registration the program makes
(``ResourceMonitor/RegisterResource``) and each call the engine makes to a provider
(``ResourceProvider/Check``, ``Diff``, ``Create``, ...). For every run of the program this prints its
phases: from its start to its first registration (imports, reading the config, planning), from the
first registration to the last one sent, from there until the last one was answered (what the engine
and the providers still had to do), and the end of the run; then, per provider process, its calls and
the slowest ones (a slow first ``Check`` of a dynamic provider is the host loading the provider)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

RUN: Final = "pulumirpc.LanguageRuntime/Run"
REGISTER: Final = "pulumirpc.ResourceMonitor/RegisterResource"
PROVIDER_CALL_PREFIX: Final = "pulumirpc.ResourceProvider/"
NEW_PLUGIN: Final = "newPlugin"
ATTR_PEER: Final = "net.peer.name"
ATTR_PLUGIN: Final = "prefix"
ATTR_PLUGIN_KIND: Final = "kind"
PLUGIN_KIND_RESOURCE: Final = "resource"
SLOWEST: Final = 3
NANOS: Final = 1e9


@dataclass(frozen=True)
class Span:
    name: str
    start: float
    """Seconds since the first span of the file began."""
    end: float
    attributes: dict[str, str]

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class RunPhases:
    """One run of the program, in seconds from the trace's start."""

    start: float
    first_registration: float
    last_registration_sent: float
    last_registration_answered: float
    end: float
    registrations: int


@dataclass
class ProviderCalls:
    """The calls the engine made to one provider process (one gRPC peer)."""

    plugin: str
    calls: list[Span] = field(default_factory=list)


def load(path: Path) -> list[Span]:
    """Every span of an ``--otel-traces file://`` file (JSON lines of OTLP ``resourceSpans``), times
    relative to the earliest start."""
    raw: list[tuple[str, int, int, dict[str, str]]] = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                document = json.loads(line)
            except json.JSONDecodeError as exc:
                msg = f"{path}:{number}: not a JSON line of OpenTelemetry spans ({exc.msg})"
                raise ValueError(msg) from None
            raw.extend(_spans(document))
    if not raw:
        msg = f"{path}: no spans (was it written by `pulumi ... --otel-traces file://{path}`?)"
        raise ValueError(msg)
    origin = min(start for _, start, _, _ in raw)
    return sorted(
        (
            Span(name, (start - origin) / NANOS, (end - origin) / NANOS, attrs)
            for name, start, end, attrs in raw
        ),
        key=lambda span: span.start,
    )


def _spans(document: dict[str, Any]) -> Iterator[tuple[str, int, int, dict[str, str]]]:
    for resource in document.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                attributes = {
                    item["key"]: str(next(iter(item.get("value", {}).values()), ""))
                    for item in span.get("attributes", [])
                }
                yield span["name"], int(span["startTimeUnixNano"]), int(span["endTimeUnixNano"]), attributes


def run_phases(spans: list[Span]) -> list[RunPhases]:
    """The program's runs (a `pulumi up` has two: its preview pass and the update), each with the
    registrations made while it ran. A run without registrations has its phases at its end."""
    phases = []
    for run in (span for span in spans if span.name == RUN):
        registrations = [s for s in spans if s.name == REGISTER and run.start <= s.start <= run.end]
        if registrations:
            first = min(s.start for s in registrations)
            sent = max(s.start for s in registrations)
            answered = max(s.end for s in registrations)
        else:
            first = sent = answered = run.end
        phases.append(RunPhases(run.start, first, sent, answered, run.end, len(registrations)))
    return phases


def provider_calls(spans: list[Span]) -> list[ProviderCalls]:
    """The engine's calls per provider process, named by the resource plugin started last before the
    process's first call (the engine's handshake with a plugin is inside the plugin's start)."""
    started = [
        s
        for s in spans
        if s.name == NEW_PLUGIN and s.attributes.get(ATTR_PLUGIN_KIND) == PLUGIN_KIND_RESOURCE
    ]
    by_peer: dict[str, ProviderCalls] = {}
    for span in spans:
        if not span.name.startswith(PROVIDER_CALL_PREFIX) or ATTR_PEER not in span.attributes:
            continue
        peer = span.attributes[ATTR_PEER]
        if peer not in by_peer:
            before = [plugin for plugin in started if plugin.start <= span.start]
            name = before[-1].attributes.get(ATTR_PLUGIN, "?") if before else "?"
            by_peer[peer] = ProviderCalls(f"{name} at {peer}")
        by_peer[peer].calls.append(span)
    return list(by_peer.values())


def report(path: Path, spans: list[Span]) -> str:
    end = max(span.end for span in spans)
    lines = [f"{path}: {end:.2f} s, {len(spans)} spans"]
    for number, run in enumerate(run_phases(spans), 1):
        lines.append(
            f"  run {number}: {run.end - run.start:.2f} s from +{run.start:.2f} s, {run.registrations} "
            f"registrations: to the first {run.first_registration - run.start:.2f} s, registering "
            f"{run.last_registration_sent - run.first_registration:.2f} s, answering the last "
            f"{run.last_registration_answered - run.last_registration_sent:.2f} s, ending "
            f"{run.end - run.last_registration_answered:.2f} s"
        )
    for provider in provider_calls(spans):
        total = sum(call.seconds for call in provider.calls)
        slowest = sorted(provider.calls, key=lambda call: -call.seconds)[:SLOWEST]
        shown = ", ".join(
            f"{call.name.removeprefix(PROVIDER_CALL_PREFIX)} {call.seconds * 1000:.0f} ms "
            f"at +{call.start:.2f} s"
            for call in slowest
        )
        lines.append(f"  {provider.plugin}: {len(provider.calls)} calls, {total:.2f} s; slowest: {shown}")
    return "\n".join(lines)


def main(argv: Iterable[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench.trace",
        description="Summarize `pulumi ... --otel-traces file://FILE`: the program's runs and the "
        "providers' calls.",
    )
    parser.add_argument(
        "files", nargs="+", type=Path, help="OpenTelemetry JSON lines written by the Pulumi CLI"
    )
    args = parser.parse_args(None if argv is None else list(argv))
    for path in args.files:
        try:
            print(report(path, load(path)))
        except (OSError, ValueError) as exc:
            parser.exit(2, f"python -m bench.trace: {exc}\n")


if __name__ == "__main__":
    main()
