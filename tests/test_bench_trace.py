"""``bench.trace``: a Pulumi CLI's OpenTelemetry file read into the program's phases and the
providers' calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.trace import load, main, provider_calls, run_phases

SECOND = 1_000_000_000
ORIGIN = 1_796_566_356 * SECOND


def span(name: str, start: float, end: float, **attributes: str) -> dict[str, Any]:
    return {
        "name": name,
        "startTimeUnixNano": str(ORIGIN + int(start * SECOND)),
        "endTimeUnixNano": str(ORIGIN + int(end * SECOND)),
        "attributes": [
            {"key": k.replace("_", "."), "value": {"stringValue": v}} for k, v in attributes.items()
        ],
    }


def document(*spans: dict[str, Any]) -> str:
    scope = {"scope": {"name": "test"}, "spans": list(spans)}
    return json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [scope]}]})


def write_trace(path: Path) -> Path:
    # Two lines, as the CLI writes them in batches: one program run with three registrations, the
    # kubernetes provider and a dynamic provider whose first Check is slow.
    first = document(
        span("pulumi", 0.0, 6.0),
        span("pulumirpc.LanguageRuntime/Run", 1.0, 5.0),
        span("newPlugin", 2.0, 2.1, kind="resource", prefix="kubernetes (resource)"),
        span("pulumirpc.ResourceMonitor/RegisterResource", 2.0, 2.5),
        span("pulumirpc.ResourceProvider/Handshake", 2.05, 2.06, net_peer_name="127.0.0.1:1"),
        span("pulumirpc.ResourceProvider/Check", 2.2, 2.21, net_peer_name="127.0.0.1:1"),
    )
    second = document(
        span("pulumirpc.ResourceMonitor/RegisterResource", 2.5, 3.0),
        span("newPlugin", 3.0, 3.2, kind="resource", prefix="pulumi-python (resource)"),
        span("pulumirpc.ResourceMonitor/RegisterResource", 3.5, 4.6),
        span("pulumirpc.ResourceProvider/Handshake", 3.1, 3.11, net_peer_name="127.0.0.1:2"),
        span("pulumirpc.ResourceProvider/Check", 3.6, 4.0, net_peer_name="127.0.0.1:2"),
        span("pulumirpc.ResourceProvider/Diff", 4.0, 4.02, net_peer_name="127.0.0.1:2"),
    )
    path.write_text(f"{first}\n{second}\n", encoding="utf-8")
    return path


def test_a_run_is_split_at_its_first_and_last_registration(tmp_path: Path) -> None:
    (run,) = run_phases(load(write_trace(tmp_path / "up.jsonl")))
    assert run.registrations == 3
    assert (run.start, run.first_registration) == pytest.approx((1.0, 2.0))
    assert (run.last_registration_sent, run.last_registration_answered, run.end) == pytest.approx(
        (3.5, 4.6, 5.0)
    )


def test_provider_calls_are_grouped_by_process_and_named_by_the_plugin_started_before(tmp_path: Path) -> None:
    kubernetes, dynamic = provider_calls(load(write_trace(tmp_path / "up.jsonl")))
    assert kubernetes.plugin == "kubernetes (resource) at 127.0.0.1:1"
    assert dynamic.plugin == "pulumi-python (resource) at 127.0.0.1:2"
    assert [call.name for call in dynamic.calls] == [
        "pulumirpc.ResourceProvider/Handshake",
        "pulumirpc.ResourceProvider/Check",
        "pulumirpc.ResourceProvider/Diff",
    ]
    assert dynamic.calls[1].seconds == pytest.approx(0.4)


def test_the_report_names_each_phase_and_the_slowest_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main([str(write_trace(tmp_path / "up.jsonl"))])
    out = capsys.readouterr().out
    assert "run 1: 4.00 s from +1.00 s, 3 registrations: to the first 1.00 s, registering 1.50 s" in out
    assert "answering the last 1.10 s, ending 0.40 s" in out
    assert "pulumi-python (resource) at 127.0.0.1:2: 3 calls, 0.43 s; slowest: Check 400 ms at +3.60 s" in out


def test_a_file_that_is_not_a_trace_is_refused_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "up.jsonl"
    path.write_text(document(span("pulumi", 0, 1)) + "\nnot json\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exited:
        main([str(path)])
    assert exited.value.code == 2
    assert f"{path}:2: not a JSON line of OpenTelemetry spans" in capsys.readouterr().err


def test_an_empty_file_says_how_to_make_a_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("", encoding="utf-8")
    with pytest.raises(SystemExit):
        main([str(path)])
    assert "--otel-traces file://" in capsys.readouterr().err
