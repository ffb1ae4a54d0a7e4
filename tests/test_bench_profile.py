"""The benchmarks' profile summary reads py-spy's raw recording: samples by thread, package and function."""

from __future__ import annotations

from pathlib import Path

from bench.profile import Profile, strip_profiler_lines

RECORDING = [
    'process 7:"python -m bench.x";thread (7): MainThread;<module> (x.py:3);'
    "plan (flyte_apps/core/plan.py:10);dump (yaml/__init__.py:5) 6",
    'process 7:"python -m bench.x";thread (7): MainThread;<module> (x.py:3);'
    "plan (flyte_apps/core/plan.py:11) 3",
    'process 7:"python -m bench.x";thread (9): reader;read (urllib3/response.py:40) 1',
]


def test_samples_are_shared_out_by_thread_package_and_function_on_all_its_lines() -> None:
    profile = Profile()
    for line in RECORDING:
        profile.add(line)
    assert profile.samples == 10
    assert profile.by_thread.most_common() == [
        ("7:python -m bench.x thread (7): MainThread", 9),
        ("7:python -m bench.x thread (9): reader", 1),
    ]
    assert profile.by_package == {"yaml": 6, "flyte_apps": 3, "urllib3": 1}
    assert profile.self_time["plan (flyte_apps/core/plan.py)"] == 3
    assert profile.total_time["plan (flyte_apps/core/plan.py)"] == 9
    assert "90.0%  7:python -m bench.x thread (7): MainThread" in profile.report()


def test_py_spys_own_lines_are_taken_out_of_the_commands_output(tmp_path: Path) -> None:
    stdout = tmp_path / "out.json"
    stdout.write_bytes(b'py-spy> Sampling process\n\n{"a": 1}\npy-spy> Wrote raw data\n')
    strip_profiler_lines(stdout)
    assert stdout.read_bytes() == b'{"a": 1}\n'
