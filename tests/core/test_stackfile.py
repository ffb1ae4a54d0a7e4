"""Stack files are read strictly: nothing a reviewer would misread, nothing Pulumi reads differently,
nothing that would deploy no app by mistake; every problem located by config key and line."""

from __future__ import annotations

import pytest

from flyte_apps.core.errors import ConfigError
from flyte_apps.core.stackfile import (
    MAX_ENVIRONMENT_STRING_BYTES,
    StackInput,
    namespace_problem,
    parse_project_file,
    parse_stack_file,
    program_config_bytes,
    program_config_problem,
)

SOURCE = "Pulumi.dev.yaml"


def parse(text: str) -> StackInput:
    return parse_stack_file(text, SOURCE)


def messages(given: StackInput) -> list[str]:
    return [str(problem) for problem in given.problems]


def test_a_clean_stack_file_gives_its_values_by_full_key() -> None:
    given = parse("config:\n  flyte-apps:project: proj\n  apps: []\n  kubernetes:context: kind\n")
    assert given.values == {"flyte-apps:project": "proj", "flyte-apps:apps": [], "kubernetes:context": "kind"}
    assert given.problems == ()


def test_an_empty_file_is_an_empty_stack() -> None:
    assert parse("") == StackInput()
    assert parse("config:\n") == StackInput()


def test_a_file_that_is_not_a_map_is_an_error() -> None:
    assert messages(parse("- a\n- b\n")) == [f"{SOURCE}: must be a YAML map, not a list"]


def test_unknown_top_level_keys_are_errors_and_config_keys_outside_config_say_where_they_belong() -> None:
    given = parse("confg:\n  flyte-apps:project: p\nflyte-apps:apps: []\n")
    assert messages(given) == [
        f"{SOURCE}: confg: unknown key 'confg'; did you mean 'config'?",
        f"{SOURCE}: flyte-apps:apps: config keys belong under 'config:' (a stack file's keys are config, "
        "secretsprovider, encryptedkey, encryptionsalt, environment)",
    ]


def test_pulumi_stack_file_keys_are_allowed_and_environment_warns_that_it_is_not_visible() -> None:
    given = parse("secretsprovider: passphrase\nencryptionsalt: v1:abc\nenvironment:\n  - prod\nconfig: {}\n")
    assert given.problems == ()
    assert len(given.warnings) == 1
    assert "not visible offline" in given.warnings[0]


@pytest.mark.parametrize("namespace", ["flyteapps", "flyte_apps", "flyte-app", "Flyte-Apps", "flyte-aps"])
def test_a_namespace_that_looks_meant_for_flyte_apps_is_an_error_with_a_suggestion(namespace: str) -> None:
    given = parse(f"config:\n  {namespace}:apps: []\n")
    assert messages(given) == [
        f"{namespace}:apps: unknown namespace '{namespace}'; did you mean 'flyte-apps:apps'? ({SOURCE})"
    ]
    assert given.values == {}


@pytest.mark.parametrize("key", ["kubernetes:context", "pulumi:tags", "aws:region", "flyte:endpoint"])
def test_other_packages_namespaces_stay_allowed(key: str) -> None:
    assert namespace_problem(key) is None


def test_a_duplicate_key_names_both_lines_at_any_level() -> None:
    text = (
        "config:\n"
        "  flyte-apps:apps:\n"
        "    - name: a\n"
        "      container:\n"
        "        image: nginx:1.27\n"
        "        image: nginx:1.28\n"
        "  flyte-apps:apps: []\n"
    )
    assert sorted(messages(parse(text))) == [
        "flyte-apps:apps: duplicate key 'flyte-apps:apps' (also on line 2); YAML readers keep only one of "
        f"them ({SOURCE}:7:3)",
        "flyte-apps:apps[0].container.image: duplicate key 'image' (also on line 5); YAML readers keep only "
        f"one of them ({SOURCE}:6:9)",
    ]


@pytest.mark.parametrize(
    ("key", "kind"), [("ON", "a boolean"), ("~", "null"), ("1", "an integer"), ("2001-01-01", "a timestamp")]
)
def test_keys_must_be_strings(key: str, kind: str) -> None:
    given = parse(
        f"config:\n  flyte-apps:apps:\n    - name: a\n      container:\n        env:\n          {key}: x\n"
    )
    assert len(given.problems) == 1
    (problem,) = given.problems
    assert problem.path.startswith("flyte-apps:apps[0].container.env.")
    assert f"key '{key}' is read as {kind}, not a string" in problem.message
    assert f"({SOURCE}:6:11)" in problem.message


def test_a_top_level_non_string_key_is_an_error_not_a_traceback() -> None:
    given = parse("1: x\nconfig: {}\n")
    assert messages(given) == [
        f"{SOURCE}:1:1: key '1' is read as an integer, not a string; quote it (\"1\":) to use it as a name"
    ]


@pytest.mark.parametrize(
    ("text", "ours", "theirs"),
    [
        ("y", "a string", "a boolean"),
        ("n", "a string", "a boolean"),
        ("0o17", "a string", "an integer"),
        ("1e3", "a string", "a number"),
        ("08", "a string", "a number"),
        ("1:20", "an integer", "a string"),
    ],
)
def test_a_value_pyyaml_and_pulumi_read_differently_is_an_error_that_says_how_to_quote(
    text: str, ours: str, theirs: str
) -> None:
    given = parse(f"config:\n  flyte-apps:apps:\n    - name: a\n      stopped: {text}\n")
    (problem,) = given.problems
    assert problem.path == "flyte-apps:apps[0].stopped"
    assert problem.message.startswith(
        f"value '{text}' is {ours} to flyte-apps (PyYAML) but {theirs} to Pulumi's YAML 1.1 reader; "
        f'write it quoted ("{text}") for a string'
    )
    assert problem.message.endswith(f"({SOURCE}:4:16)")


@pytest.mark.parametrize("text", ["'y'", '"0o17"', "'1e3'", "true", "17", "nginx:1.27", "1.5", "null"])
def test_values_both_readers_agree_on_are_fine(text: str) -> None:
    assert parse(f"config:\n  flyte-apps:project: {text}\n").problems == ()


def test_a_syntax_error_stops_with_file_line_and_column() -> None:
    with pytest.raises(ConfigError) as raised:
        parse("config:\n  flyte-apps:apps: [\n")
    (problem,) = raised.value.problems
    assert problem.path.startswith(f"{SOURCE}:3:")
    assert problem.message.startswith("is not valid YAML: ")
    assert "<unicode string>" not in str(raised.value)


def test_every_problem_of_a_file_is_reported_in_one_pass() -> None:
    text = "config:\n  flyteapps:project: p\n  flyte-apps:domain: y\n  flyte-apps:domain: n\nextra: 1\n"
    assert sorted(problem.path for problem in parse(text).problems) == [
        f"{SOURCE}: extra",
        "flyte-apps:domain",
        "flyte-apps:domain",
        "flyte-apps:domain",
        "flyteapps:project",
    ]


def test_project_defaults_come_from_default_or_value_and_skip_bare_declarations() -> None:
    given = parse_project_file(
        "name: flyte-apps\nruntime: python\nconfig:\n  project: {default: proj}\n"
        "  flyte-apps:domain: {value: dev}\n  flyte-apps:apps: {type: array}\n  kubernetes:context: kind\n",
        "Pulumi.yaml",
    )
    assert given.values == {
        "flyte-apps:project": "proj",
        "flyte-apps:domain": "dev",
        "kubernetes:context": "kind",
    }
    assert given.problems == ()


def test_the_legacy_config_form_is_read_as_pulumi_reads_it() -> None:
    # Pulumi's ParseKey reads <namespace>:config:<name> as <namespace>:<name> (checked with the CLI).
    given = parse_stack_file(
        "config:\n  flyte-apps:config:apps: []\n  kubernetes:config:context: c\n", SOURCE
    )
    assert given.problems == ()
    assert given.values == {"flyte-apps:apps": [], "kubernetes:context": "c"}


@pytest.mark.parametrize("key", ["flyte-apps:apps:extra", "flyte-apps:a:b:c", "kubernetes:x:context"])
def test_a_key_pulumi_cannot_parse_is_an_error_not_skipped(key: str) -> None:
    given = parse_stack_file(f"config:\n  {key}: 1\n", SOURCE)
    assert [p.path for p in given.problems] == [key]
    assert "not a config key Pulumi reads" in given.problems[0].message
    assert given.values == {}


def test_two_spellings_of_one_key_are_an_error() -> None:
    text = "config:\n  flyte-apps:config:project: a\n  flyte-apps:project: b\n"
    given = parse_stack_file(text, SOURCE)
    assert [p.path for p in given.problems] == ["flyte-apps:project"]
    assert "are the same key to Pulumi" in given.problems[0].message


def padded_to(size: int) -> dict[str, object]:
    """A config whose ``PULUMI_CONFIG=...`` string is ``size`` bytes, NUL included."""
    config: dict[str, object] = {
        "flyte-apps:apps": [{"name": "web", "container": {"image": "nginx:1.27"}}],
        "pad:x": "",
    }
    config["pad:x"] = "a" * (size - program_config_bytes(config))
    return config


def test_the_program_config_counts_pulumis_json_map_of_strings_with_gos_escapes() -> None:
    # PULUMI_CONFIG={"flyte-apps:apps":"[{\"name\":\"a\"}]","k:v":"<"} and its NUL; Go writes < as \u003c.
    config = {"flyte-apps:apps": [{"name": "a"}], "k:v": "<"}
    text = '{"flyte-apps:apps":"[{\\"name\\":\\"a\\"}]","k:v":"\\u003c"}'
    assert program_config_bytes(config) == len("PULUMI_CONFIG=") + len(text) + 1


def test_a_config_pulumi_cannot_hand_to_the_program_on_linux_is_a_problem_at_the_apps() -> None:
    """The boundary, run with the e2e suite's language host: a config padded to 131,072 bytes started
    the program, one byte more failed with "argument list too long" (E2BIG)."""
    assert program_config_problem(padded_to(MAX_ENVIRONMENT_STRING_BYTES)) is None
    problem = program_config_problem(padded_to(MAX_ENVIRONMENT_STRING_BYTES + 1))
    assert problem is not None
    assert problem.path == "flyte-apps:apps"
    assert "128 KiB" in problem.message
    assert "PULUMI_CONFIG" in problem.message
    assert "argument list too long" in problem.message
