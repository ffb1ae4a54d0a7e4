"""Regenerate tests/fixtures/go_spec_corpus.json: protobuf-go's bytes for a fixed corpus of specs.

``python -m tests.vectors.go_specs`` (``make vectors``; needs the ``spec-judge`` tool that ``make
e2e-tools`` builds) hands each message below, in Python's field-number order, to the Go judge
(``tests/support/spec_judge.py``) and records what Go writes. ``make test`` then checks our encoder
against the record without Go (``tests/core/test_goorder.py``). The corpus: upstream's six vectors
(docs/upstream.md), every app of every stack file in the repository, every app of the SDK parity
cases and every spec Flyte's SDK wrote (``tests/fixtures/sdk``), and seeded random ``Spec`` and
``Mixed`` messages covering every field kind, oneofs, maps and zero values.
"""

from __future__ import annotations

import base64
import json
import random
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from flyteidl2.app import app_definition_pb2 as app_pb
from google.protobuf import text_format
from google.protobuf.message import Message

from flyte_apps.cli.stackfile import read_stack_config
from flyte_apps.core.errors import ConfigError
from flyte_apps.core.plan import plan_stack
from tests.e2e.build import ToolError, locate
from tests.support.config import REPO_ROOT
from tests.support.random_messages import fill
from tests.support.sdk_cases import cases as sdk_cases
from tests.support.spec_judge import CORPUS, JUDGE_TOOL, MIXED, SPEC, judge, mixed_class

SEED: Final = 20261204
RANDOM_SPECS: Final = 300
RANDOM_MIXED: Final = 100
RANDOM_CHANCE: Final = 0.6
"""Each field set with this probability: enough that the 300 specs reach every field under ``Spec``."""
STACK_FILES: Final = (
    REPO_ROOT / "Pulumi.dev.yaml",
    *sorted((REPO_ROOT / "tests" / "e2e" / "stacks").glob("*.yaml")),
)
SDK_FIXTURES: Final = REPO_ROOT / "tests" / "fixtures" / "sdk"


def upstream_vectors() -> Iterator[tuple[str, Message]]:
    """The specs of upstream's own vectors (their bytes are in tests/core/test_goorder.py)."""

    def base() -> app_pb.Spec:
        spec = app_pb.Spec(desired_state=app_pb.Spec.DESIRED_STATE_ACTIVE)
        spec.container.image = "nginx:latest"
        return spec

    yield "upstream-A", base()
    stopped = base()
    stopped.desired_state = app_pb.Spec.DESIRED_STATE_STOPPED
    yield "upstream-B", stopped
    partitioned = base()
    partitioned.extended_resources.gpu_accelerator.device = "nvidia-tesla-a100"
    partitioned.extended_resources.gpu_accelerator.partition_size = "1g.5gb"
    yield "upstream-C", partitioned
    whole = base()
    whole.extended_resources.gpu_accelerator.device = "nvidia-h100"
    whole.extended_resources.gpu_accelerator.unpartitioned = True
    whole.extended_resources.gpu_accelerator.device_class = 1
    yield "upstream-D", whole
    inputs = base()
    inputs.inputs.items.add(name="model", string_value="s3://bucket/m")
    yield "upstream-E", inputs
    clustered = base()
    clustered.cluster = "eu-1"
    yield "upstream-F", clustered


def stack_specs() -> Iterator[tuple[str, Message]]:
    for path in STACK_FILES:
        try:
            plan = plan_stack(read_stack_config(project_dir=REPO_ROOT, config_file=path))
        except ConfigError:
            continue  # a stack made to be refused
        for app in plan.apps:
            yield f"stack {path.name} {app.key}", app_pb.Spec.FromString(app.blob.data)


def sdk_specs() -> Iterator[tuple[str, Message]]:
    for case in sdk_cases():
        yield f"sdk-case {case.id}", app_pb.Spec.FromString(base64.b64decode(case.spec_b64()))
    for path in sorted(SDK_FIXTURES.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if "spec_b64" in data:
            yield f"sdk-fixture {path.stem}", app_pb.Spec.FromString(base64.b64decode(data["spec_b64"]))


STAND_IN_SPECS: Final = (
    'container { image: "nginx:1.27" } ingress { } desired_state: DESIRED_STATE_ACTIVE',
    'container { image: "ghcr.io/acme/api:1.0" } ingress { } creator { user { } }',
    'container { image: "ghcr.io/acme/live:1.0" } ingress { }',
    'container { image: "ghcr.io/acme/api:1.0" env { key: "DB_PASSWORD" value: "hunter2-not-for-files" } }'
    " ingress { } desired_state: DESIRED_STATE_ACTIVE",
    'container { image: "ghcr.io/acme/api:1.0" env { key: "LOG_LEVEL" value: '
    '"postgres://app:hunter2-not-for-files@db/app" } } ingress { } desired_state: DESIRED_STATE_ACTIVE',
    'container { image: "nginx:1.27" resources { requests { name: GPU value: "1" }'
    ' limits { name: GPU value: "1" } } } ingress { private: true } desired_state: DESIRED_STATE_ACTIVE'
    ' extended_resources { gpu_accelerator { device: "nvidia-tesla-a100" } }',
)
"""Specs tests hand to upstream's stand-in (``tests/support/upstream_kservice.py``) that no stack or SDK
case above holds."""


def stand_in_specs() -> Iterator[tuple[str, Message]]:
    for index, text in enumerate(STAND_IN_SPECS):
        yield f"stand-in {index}", text_format.Parse(text, app_pb.Spec())


def random_messages() -> Iterator[tuple[str, str, Message]]:
    rng = random.Random(SEED)
    for index in range(RANDOM_SPECS):
        yield f"random-spec {index}", SPEC, fill(app_pb.Spec(), rng, RANDOM_CHANCE)
    mixed = mixed_class()
    for index in range(RANDOM_MIXED):
        yield f"random-mixed {index}", MIXED, fill(mixed(), rng, RANDOM_CHANCE)


def all_cases() -> list[tuple[str, str, Message]]:
    named = [*upstream_vectors(), *stack_specs(), *sdk_specs(), *stand_in_specs()]
    return [*((name, SPEC, message) for name, message in named), *random_messages()]


def main() -> int:
    try:
        binary = locate([JUDGE_TOOL])[JUDGE_TOOL].binary(JUDGE_TOOL)
    except ToolError as exc:
        print(f"go_specs: {exc}", file=sys.stderr)
        return 1
    found = all_cases()
    written: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as work:
        for message_name in (SPEC, MIXED):
            chosen = [(name, message) for name, kind, message in found if kind == message_name]
            inputs = [message.SerializeToString(deterministic=True) for _, message in chosen]
            answers = judge(binary, message_name, inputs, Path(work))
            written.extend(
                {
                    "name": name,
                    "message": message_name,
                    "input": base64.b64encode(data).decode("ascii"),
                    "go": base64.b64encode(answer).decode("ascii"),
                }
                for (name, _), data, answer in zip(chosen, inputs, answers, strict=True)
            )
    document = {"judge": "tests/e2e/tools/spec-judge (python -m tests.vectors.go_specs)", "cases": written}
    CORPUS.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {CORPUS} ({len(written)} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
