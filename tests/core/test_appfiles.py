"""Apps in files beside the stack file (``flyte-apps:appFiles``): appended to the stack's own apps in
order, each named by its place, every problem of the list and of the files reported with the rest,
and a stack planned from them identical to one that writes the same apps inline."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from flyte_apps.core.appfiles import (
    AppFileText,
    AppFileUnreadable,
    over_bound_message,
    with_app_files,
)
from flyte_apps.core.bounds import MAX_INPUT_BYTES, MAX_POD_TEMPLATE_VALUES
from flyte_apps.core.errors import ConfigError
from flyte_apps.core.plan import plan_stack
from flyte_apps.core.stackfile import StackInput, located
from tests.support.config import minimal_config

FILES = "flyte-apps:appFiles"
APPS = "flyte-apps:apps"
INSIDE = "apps files stay inside the project directory"


def app(name: str, image: str = "nginx:1.27") -> dict[str, Any]:
    return {"name": name, "container": {"image": image}}


class Disk:
    """Files by name, read as a reader the core is given; records each read's byte limit."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files
        self.limits: list[tuple[str, int]] = []

    def __call__(self, name: str, limit: int) -> AppFileText:
        self.limits.append((name, limit))
        if name not in self.files:
            msg = "is not found"
            raise AppFileUnreadable(msg)
        return AppFileText(f"/project/{name}", self.files[name])


def expand(config: dict[str, Any], files: dict[str, str]) -> StackInput:
    return with_app_files(StackInput(values=config), Disk(files))


def messages(given: StackInput) -> list[str]:
    return [str(problem) for problem in given.problems]


def test_the_files_apps_follow_the_stacks_own_in_the_order_listed_each_named_by_its_place() -> None:
    config = {**minimal_config(), FILES: ["b.yaml", "a.yaml"]}
    files = {"a.yaml": yaml.safe_dump([app("a0"), app("a1")]), "b.yaml": yaml.safe_dump([app("b0")])}
    given = expand(config, files)
    assert given.problems == ()
    assert FILES not in given.values
    assert [entry["name"] for entry in given.values[APPS]] == ["myapp", "b0", "a0", "a1"]
    assert given.app_paths == (
        f"{APPS}[0]",
        f"{FILES}[0][0]",
        f"{FILES}[1][0]",
        f"{FILES}[1][1]",
    )


def test_a_stack_planned_from_apps_files_renders_what_the_same_apps_written_inline_render() -> None:
    inline = {**minimal_config(), APPS: [app("one"), app("two"), app("three")]}
    split = {**minimal_config(), APPS: [app("one")], FILES: ["more.yaml"]}
    given = expand(split, {"more.yaml": yaml.safe_dump([app("two"), app("three")])})
    from_files = plan_stack(given.values, app_paths=given.app_paths)
    written = plan_stack(inline)
    assert [o.manifest for o in from_files.objects()] == [o.manifest for o in written.objects()]
    assert [a.config.path for a in from_files.apps] == [f"{APPS}[0]", f"{FILES}[0][0]", f"{FILES}[0][1]"]


def test_a_stack_without_own_apps_takes_the_files_apps() -> None:
    config = {"flyte-apps:project": "proj", "flyte-apps:domain": "dev", FILES: ["only.yaml"]}
    given = expand(config, {"only.yaml": yaml.safe_dump([app("solo")])})
    assert [entry["name"] for entry in given.values[APPS]] == ["solo"]
    assert given.app_paths == (f"{FILES}[0][0]",)


def test_without_the_key_the_input_is_unchanged() -> None:
    given = StackInput(values=minimal_config())
    assert with_app_files(given, Disk({})) is given


def test_a_problem_in_a_files_app_is_named_by_its_place_and_located_at_the_files_line() -> None:
    text = "- name: fine\n  container: {image: nginx:1.27}\n- name: broken\n  container:\n    image: ''\n"
    given = expand({**minimal_config(), FILES: ["apps.yaml"]}, {"apps.yaml": text})
    with pytest.raises(ConfigError) as caught:
        plan_stack(given.values, problems=given.problems, app_paths=given.app_paths)
    assert [str(p) for p in located(caught.value.problems, given)] == [
        f"/project/apps.yaml:5 {FILES}[0][1].container.image: must not be empty"
    ]


def test_two_apps_of_the_same_name_in_different_files_are_named_by_both_places() -> None:
    config = {**minimal_config(), FILES: ["a.yaml", "b.yaml"]}
    given = expand(config, {"a.yaml": yaml.safe_dump([app("twin")]), "b.yaml": yaml.safe_dump([app("twin")])})
    with pytest.raises(ConfigError) as caught:
        plan_stack(given.values, problems=given.problems, app_paths=given.app_paths)
    text = str(caught.value)
    assert f"{FILES}[0][0]" in text and f"{FILES}[1][0]" in text, text


@pytest.mark.parametrize(
    ("listed", "message"),
    [
        ("apps.yaml", "must be a list of file paths, not str"),
        ({"a": 1}, "must be a list of file paths, not dict"),
    ],
)
def test_a_list_that_is_not_a_list_is_one_problem_and_adds_no_apps(listed: object, message: str) -> None:
    given = expand({**minimal_config(), FILES: listed}, {"apps.yaml": yaml.safe_dump([app("x")])})
    assert [p.path for p in given.problems] == [FILES]
    assert given.problems[0].message.startswith(message)
    assert [entry["name"] for entry in given.values[APPS]] == ["myapp"]


def test_names_that_leave_the_project_or_repeat_a_file_are_refused_without_reading_them() -> None:
    listed = [
        "/etc/passwd",
        "../secrets.yaml",
        "a/../../b.yaml",
        "",
        7,
        "apps.yaml",
        "./apps.yaml",
        "x\0.yaml",
    ]
    disk = Disk({"apps.yaml": yaml.safe_dump([app("one")])})
    given = with_app_files(StackInput(values={**minimal_config(), FILES: listed}), disk)
    assert messages(given) == [
        f"{FILES}[0]: '/etc/passwd' is absolute: give a path relative to the project directory (where "
        "Pulumi.yaml is)",
        f"{FILES}[1]: '../secrets.yaml' goes up a directory ('..'): {INSIDE}",
        f"{FILES}[2]: 'a/../../b.yaml' goes up a directory ('..'): {INSIDE}",
        f"{FILES}[3]: must be a file path, not empty",
        f"{FILES}[4]: must be a file path, not int",
        f"{FILES}[6]: './apps.yaml' is listed twice (also at {FILES}[5]): its apps would be twice",
        f"{FILES}[7]: must be a file path; it holds a NUL character",
    ]
    assert [name for name, _ in disk.limits] == ["apps.yaml"]
    assert [entry["name"] for entry in given.values[APPS]] == ["myapp", "one"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "",
            "'/project/apps.yaml' is empty (an apps file holds a YAML list of apps, each written as under "
            "flyte-apps:apps; [] for none)",
        ),
        (
            "name: x\n",
            "'/project/apps.yaml' holds a map (an apps file holds a YAML list of apps, each "
            "written as under flyte-apps:apps)",
        ),
        ("- name: [\n", "/project/apps.yaml:2:1: "),
    ],
    ids=["empty", "a-map", "not-yaml"],
)
def test_a_file_that_holds_no_list_of_apps_is_a_problem_at_its_entry(text: str, message: str) -> None:
    given = expand({**minimal_config(), FILES: ["apps.yaml"]}, {"apps.yaml": text})
    assert [p.path for p in given.problems] == [f"{FILES}[0]"]
    assert given.problems[0].message.startswith(message), given.problems[0].message
    assert [entry["name"] for entry in given.values[APPS]] == ["myapp"]


def test_an_empty_list_adds_no_apps_and_no_problem() -> None:
    given = expand({**minimal_config(), FILES: ["none.yaml"]}, {"none.yaml": "[]\n"})
    assert given.problems == ()
    assert given.app_paths == (f"{APPS}[0]",)


def test_what_a_reader_reads_of_a_file_is_located_at_its_place_in_the_file() -> None:
    text = "- name: dup\n  name: again\n  container: {image: nginx:1.27}\n"
    given = expand({**minimal_config(), FILES: ["apps.yaml"]}, {"apps.yaml": text})
    (problem,) = given.problems
    assert problem.path == f"{FILES}[0][0].name"
    assert "(/project/apps.yaml:2:3)" in problem.message


def test_a_file_that_cannot_be_read_is_named_with_why() -> None:
    given = expand({**minimal_config(), FILES: ["gone.yaml"]}, {})
    assert messages(given) == [f"{FILES}[0]: 'gone.yaml' is not found"]


def test_every_file_is_read_within_what_the_files_before_it_left_of_one_bound() -> None:
    first = yaml.safe_dump([app("a")])
    disk = Disk({"a.yaml": first, "b.yaml": yaml.safe_dump([app("b")])})
    with_app_files(StackInput(values={**minimal_config(), FILES: ["a.yaml", "b.yaml"]}), disk)
    assert disk.limits == [("a.yaml", MAX_INPUT_BYTES), ("b.yaml", MAX_INPUT_BYTES - len(first.encode()))]
    assert over_bound_message(MAX_INPUT_BYTES + 1, MAX_INPUT_BYTES).endswith(
        "an apps file may be at most 16.0 MiB"
    )
    assert "more than the 1,024 bytes left" in over_bound_message(4096, 1024)


def test_the_stacks_own_apps_that_are_not_a_list_stay_its_problem() -> None:
    config = {**minimal_config(), APPS: "myapp", FILES: ["apps.yaml"]}
    given = expand(config, {"apps.yaml": yaml.safe_dump([app("x")])})
    assert given.values[APPS] == "myapp"
    assert given.app_paths is None
    with pytest.raises(ConfigError, match=r"flyte-apps:apps: must be a list of apps, not str"):
        plan_stack(given.values, problems=given.problems, app_paths=given.app_paths)


def test_apps_files_over_the_stacks_value_bounds_are_refused_before_planning() -> None:
    pods = [
        {**app(f"a{index}"), "pod": {"x": ["v"] * 1000}}
        for index in range(MAX_POD_TEMPLATE_VALUES // 1000 + 1)
    ]
    with pytest.raises(ConfigError, match=r"pod templates .* hold more than 100,000 values"):
        expand({**minimal_config(), FILES: ["pods.yaml"]}, {"pods.yaml": yaml.safe_dump(pods)})


def test_a_reader_that_was_not_given_the_files_refuses_the_key_instead_of_dropping_their_apps() -> None:
    with pytest.raises(ConfigError, match=r"flyte-apps:appFiles: apps files are not read by this reader"):
        plan_stack({**minimal_config(), FILES: ["apps.yaml"]})


def test_a_misspelt_key_is_pointed_at_app_files() -> None:
    with pytest.raises(
        ConfigError, match=r"flyte-apps:appfile: unknown key 'appfile'; did you mean 'appFiles'"
    ):
        plan_stack({**minimal_config(), "flyte-apps:appfile": ["apps.yaml"]})
