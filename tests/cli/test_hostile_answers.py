"""A server or proxy that answers without end, inflates, drips or pages forever (hostile input round 3,
items 5 and 6): every command ends with exit 3 and one error line, within a memory bound and within
``--request-timeout``, and a log line without end is cut, not held.

Each command runs as a subprocess under :func:`~tests.support.bounded_run.run_bounded`: the harness
kills it when its time runs out and reads its peak memory from ``wait4``. The bodies are finite (a
gibibyte, a few minutes of drip) so that a regression fails the bound instead of exhausting the machine.
"""

from __future__ import annotations

import itertools
import json
import time
import zlib
from collections.abc import Iterator

import pytest

from flyte_apps.core.logparse import MAX_LINE_BYTES, cut_marker
from flyte_apps.kube.api import MAX_LIST_PAGES
from tests.cli.test_hostile_cluster import FLYTE_APPS, LOGS, STATUS, WATCH, errors_of, serving
from tests.fakes.kube_api import FakeKubeApi
from tests.support.bounded_run import BoundedRun, run_bounded
from tests.support.config import MINIMAL_NAMESPACE as NS

MIB = 2**20
BODY_MIB = 1024
"""Size of the endless answers, decompressed: far past the 64 MiB bound, far below the machine's memory."""
PEAK_MEMORY = 400 * MIB
"""Peak resident memory a command may reach on those answers (it idles at about 70 MiB)."""
TIME_BOUND = 60.0
"""Seconds before the harness kills a command (each bound under test is a few seconds)."""
COMMANDS = [STATUS, LOGS, WATCH]
IDS = ["status", "logs", "watch"]
STAMP = b"2026-01-01T00:00:00.000000001Z "


def run(server: FakeKubeApi, *args: str) -> BoundedRun:
    assert server.kubeconfig_path is not None
    argv = [FLYTE_APPS, *args, "--kubeconfig", str(server.kubeconfig_path), "--namespace", NS]
    return run_bounded(argv, timeout=TIME_BOUND)


def one_error(result: BoundedRun) -> str:
    assert not result.killed, result.stderr[-2000:]
    assert result.returncode == 3, (result.returncode, result.stderr[-2000:])
    lines = errors_of(result)  # type: ignore[arg-type]
    assert len(lines) == 1, result.stderr[-2000:]
    return lines[0]


def endless_json() -> Iterator[bytes]:
    """The start of a list, then a gibibyte of JSON whitespace."""
    yield b'{"kind": "List", "items": ['
    block = b" " * MIB
    for _ in range(BODY_MIB):
        yield block


@pytest.fixture(scope="module")
def gzip_bomb() -> list[bytes]:
    """:func:`endless_json`, gzipped: about a megabyte that inflates to a gibibyte."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [compressor.compress(piece) for piece in endless_json()]
    parts.append(compressor.flush())
    data = b"".join(parts)
    return [data[i : i + 64 * 1024] for i in range(0, len(data), 64 * 1024)]


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_an_answer_without_end_is_cut_at_the_size_bound(
    kube_server: FakeKubeApi, command: tuple[str, ...]
) -> None:
    serving(kube_server)
    kube_server.serve_stream_next(None, endless_json, times=None)
    result = run(kube_server, *command)
    line = one_error(result)
    assert "larger than 64.0 MiB (decompressed)" in line
    assert result.peak_rss < PEAK_MEMORY, result.peak_rss


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_a_gzip_bomb_is_cut_at_the_size_bound_counted_decompressed(
    kube_server: FakeKubeApi, command: tuple[str, ...], gzip_bomb: list[bytes]
) -> None:
    serving(kube_server)
    kube_server.serve_stream_next(
        None, lambda: iter(gzip_bomb), headers={"Content-Encoding": "gzip"}, times=None
    )
    result = run(kube_server, *command)
    line = one_error(result)
    assert "larger than 64.0 MiB (decompressed)" in line
    assert result.peak_rss < PEAK_MEMORY, result.peak_rss


def drip() -> Iterator[bytes]:
    """A list answer that brings one byte every half second (each read well within any socket timeout),
    for two minutes."""
    yield b"{"
    for _ in range(240):
        time.sleep(0.5)
        yield b" "


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_request_timeout_bounds_a_whole_answer_that_drips(
    kube_server: FakeKubeApi, command: tuple[str, ...]
) -> None:
    serving(kube_server)
    kube_server.serve_stream_next(None, drip, times=None)
    line = one_error(run(kube_server, *command, "--request-timeout", "2s"))
    assert "within --request-timeout 2s" in line


@pytest.mark.parametrize("command", COMMANDS, ids=IDS)
def test_a_list_with_a_new_continue_token_on_every_page_ends_at_the_page_budget(
    kube_server: FakeKubeApi, command: tuple[str, ...]
) -> None:
    serving(kube_server)
    tokens = itertools.count()

    def page() -> Iterator[bytes]:
        yield json.dumps({"kind": "List", "items": [], "metadata": {"continue": f"t{next(tokens)}"}}).encode()

    kube_server.serve_stream_next("limit=", page, times=None)
    line = one_error(run(kube_server, *command))
    assert f"the list did not end within {MAX_LIST_PAGES} pages" in line
    # Each list is cut at the budget (watch lists Revisions, then KServices), and nothing follows.
    assert next(tokens) <= 2 * MAX_LIST_PAGES


def test_watch_on_a_silent_cluster_gives_up_after_one_request_timeout(kube_server: FakeKubeApi) -> None:
    serving(kube_server)
    kube_server.add_latency(TIME_BOUND)
    line = one_error(run(kube_server, *WATCH, "--request-timeout", "1s"))
    assert "within --request-timeout 1s" in line
    lists = [r for r in kube_server.requests if r.method == "GET" and "limit" in r.query]
    assert len(lists) == 1, lists  # the Revisions' list timed out; the KServices' is not waited for too


def test_a_log_line_without_end_is_cut_and_the_log_goes_on(kube_server: FakeKubeApi) -> None:
    serving(kube_server)

    def endless_line() -> Iterator[bytes]:
        yield STAMP
        block = b"x" * MIB
        for _ in range(BODY_MIB // 2):
            yield block
        yield b"\n" + STAMP + b"the next line\n"

    kube_server.serve_stream_next("/log", endless_line, content_type="text/plain")
    result = run(kube_server, *LOGS)
    assert not result.killed
    assert result.returncode == 0, result.stderr[-2000:]
    first, second = result.stdout.splitlines()
    assert first.endswith("x" * 100 + cut_marker(MAX_LINE_BYTES))
    assert len(first) < MAX_LINE_BYTES + 200
    assert second.endswith("the next line")
    assert result.peak_rss < PEAK_MEMORY, result.peak_rss
