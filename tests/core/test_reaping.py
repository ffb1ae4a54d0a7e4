"""The core both RevisionReapers adapt: when a reaper runs again or is another one, its inputs by each
adapter's names, and the one line a failed stop is."""

from __future__ import annotations

from typing import Any, Final

import pytest

from flyte_apps.core.errors import FlyteAppsError
from flyte_apps.core.reaping import ReaperKeys, StopFailed, StopInputs, diff_stop, stop_failure

SNAKE: Final = ReaperKeys(namespace="namespace", kservice="kservice_name", spec_sha="spec_sha", timeout="t")
CAMEL: Final = ReaperKeys(
    namespace="namespace", kservice="kserviceName", spec_sha="specSha", timeout="timeoutSeconds"
)


def props(keys: ReaperKeys, **changes: Any) -> dict[str, Any]:
    values = {keys.namespace: "flyte", keys.kservice: "app-p-d", keys.spec_sha: "abc", keys.timeout: 30.0}
    return values | {getattr(keys, field): value for field, value in changes.items()} | {"cluster": "/a"}


@pytest.mark.parametrize("keys", [SNAKE, CAMEL], ids=["dynamic", "package"])
def test_the_same_inputs_change_nothing_whatever_cluster_is_recorded(keys: ReaperKeys) -> None:
    diff = diff_stop(keys, props(keys), {**props(keys), "cluster": "/elsewhere"})
    assert (diff.changed, diff.replaces) == ((), ())


@pytest.mark.parametrize("keys", [SNAKE, CAMEL], ids=["dynamic", "package"])
def test_a_new_stopped_spec_or_timeout_runs_the_reaper_again_in_place(keys: ReaperKeys) -> None:
    diff = diff_stop(keys, props(keys), props(keys, spec_sha="def", timeout=60.0))
    assert diff.changed == (keys.spec_sha, keys.timeout)
    assert diff.replaces == ()


@pytest.mark.parametrize("keys", [SNAKE, CAMEL], ids=["dynamic", "package"])
def test_another_kservice_is_another_reaper(keys: ReaperKeys) -> None:
    diff = diff_stop(keys, props(keys), props(keys, namespace="apps", kservice="other-p-d"))
    assert diff.replaces == (keys.namespace, keys.kservice)


def test_an_input_missing_from_old_state_counts_as_changed() -> None:
    old = {key: value for key, value in props(CAMEL).items() if key != CAMEL.timeout}
    assert diff_stop(CAMEL, old, props(CAMEL)).changed == (CAMEL.timeout,)


def test_inputs_are_read_by_the_adapters_names() -> None:
    assert CAMEL.inputs(props(CAMEL)) == StopInputs("flyte", "app-p-d", "abc", 30.0)
    assert SNAKE.inputs(props(SNAKE, timeout=5)).timeout_seconds == 5.0


def test_a_missing_or_bad_input_is_one_line_naming_the_kservice() -> None:
    with pytest.raises(StopFailed, match=r"^stopping flyte/app-p-d: KeyError: 'specSha'$"):
        CAMEL.inputs({key: value for key, value in props(CAMEL).items() if key != CAMEL.spec_sha})
    with pytest.raises(StopFailed, match=r"^stopping flyte/app-p-d: ValueError: could not convert"):
        CAMEL.inputs(props(CAMEL, timeout="soon"))


def test_a_failure_of_ours_keeps_its_message_others_are_named_by_type() -> None:
    assert (
        str(stop_failure("ns/app", FlyteAppsError("the cluster said no")))
        == "stopping ns/app: the cluster said no"
    )
    assert str(stop_failure("ns/app", OSError("refused"))) == "stopping ns/app: OSError: refused"
    long = stop_failure("ns/app", FlyteAppsError("x" * 100_000))
    assert "\n" not in str(long)
    assert len(str(long)) < 10_000
