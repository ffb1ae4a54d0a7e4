"""The engine benchmark's stops of apps with running pods: the apps it deploys, the rounds its measuring
child hands back, and the rows made of them."""

from __future__ import annotations

import json
from dataclasses import asdict

from bench.engine_pods import IMAGE, STOPS, TITLE, app_entries, round_from
from bench.engine_scale import STOP_APPS, ReaperSteps, StopRound, config_for, stop_round_rows
from flyte_apps.core.plan import plan_stack

MIN_SCALE = "autoscaling.knative.dev/min-scale"


def test_the_stopped_apps_are_valid_warm_apps_of_the_image_the_node_imports() -> None:
    plan = plan_stack(config_for(app_entries(), "bench-stops-0"))
    assert len(plan.apps) == STOP_APPS + 1
    for app in plan.apps:
        template = app.kservice["spec"]["template"]
        assert template["metadata"]["annotations"][MIN_SCALE] == "1"
        assert [c["image"] for c in template["spec"]["containers"]] == [IMAGE]
        assert not app.config.input.stopped


def test_the_rounds_come_back_from_the_measuring_child_as_they_were() -> None:
    rounds = [StopRound(alone=2.5, together=6.25, steps=ReaperSteps(span=4.75, slowest=3.5))]
    handed = json.loads(json.dumps([asdict(r) for r in rounds]))
    assert [round_from(data) for data in handed] == rounds


def test_the_pods_rows_set_the_reapers_steps_against_the_slowest_and_ten_stops_against_one() -> None:
    rounds = [
        StopRound(alone=2.0, together=6.0, steps=ReaperSteps(span=4.0, slowest=4.0)),
        StopRound(alone=2.0, together=8.0, steps=ReaperSteps(span=6.0, slowest=4.0)),
        StopRound(alone=2.0, together=7.0, steps=ReaperSteps(span=4.4, slowest=4.0)),
    ]
    steps, against_one = stop_round_rows(TITLE, STOPS, rounds)
    assert (steps.benchmark, steps.ratio, steps.goal, steps.result) == (
        TITLE,
        "1.10x [1.00x - 1.50x]",
        "<= 1.2x",
        "PASS",
    )
    assert STOPS in steps.measure and STOPS in against_one.measure
    assert (against_one.ratio, against_one.goal, against_one.result) == ("3.50x [3.00x - 4.00x]", "", "")
