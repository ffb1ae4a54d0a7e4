"""What each YAML reader makes of a plain scalar, and YAML we write that every reader reads back as
the same strings. The table's Go rows were checked by hand against yaml.v2's resolve rules."""

from __future__ import annotations

import pytest
import yaml

from flyte_apps.core import yamlcompat as y
from flyte_apps.core.yamlout import dump_yaml

# text, PyYAML, yaml.v2 (Pulumi, kubectl apply), yaml.v3 (kustomize), YAML 1.2 core
READINGS = [
    ("y", y.STR, y.BOOL, y.STR, y.STR),
    ("N", y.STR, y.BOOL, y.STR, y.STR),
    ("yes", y.BOOL, y.BOOL, y.STR, y.STR),
    ("on", y.BOOL, y.BOOL, y.STR, y.STR),
    ("Off", y.BOOL, y.BOOL, y.STR, y.STR),
    ("true", y.BOOL, y.BOOL, y.BOOL, y.BOOL),
    ("0o17", y.STR, y.INT, y.INT, y.INT),
    ("017", y.INT, y.INT, y.INT, y.INT),
    ("08", y.STR, y.FLOAT, y.FLOAT, y.INT),
    ("0x1F", y.INT, y.INT, y.INT, y.INT),
    ("0b101", y.INT, y.INT, y.INT, y.STR),
    ("1_000", y.INT, y.INT, y.INT, y.STR),
    ("1e3", y.STR, y.FLOAT, y.FLOAT, y.FLOAT),
    ("1.0e3", y.STR, y.FLOAT, y.FLOAT, y.FLOAT),
    ("1.0e+3", y.FLOAT, y.FLOAT, y.FLOAT, y.FLOAT),
    (".5", y.FLOAT, y.FLOAT, y.FLOAT, y.FLOAT),
    (".inf", y.FLOAT, y.FLOAT, y.FLOAT, y.FLOAT),
    ("1:20", y.INT, y.STR, y.STR, y.STR),
    ("~", y.NULL, y.NULL, y.NULL, y.NULL),
    ("null", y.NULL, y.NULL, y.NULL, y.NULL),
    ("2001-12-14", y.TIMESTAMP, y.TIMESTAMP, y.TIMESTAMP, y.STR),
    ("<<", y.MERGE, y.MERGE, y.MERGE, y.STR),
    ("=", y.VALUE, y.STR, y.STR, y.STR),
    ("99999999999999999999", y.INT, y.FLOAT, y.FLOAT, y.INT),
    ("1e400", y.STR, y.STR, y.STR, y.FLOAT),
    ("1.2.3", y.STR, y.STR, y.STR, y.STR),
    ("nginx:1.27", y.STR, y.STR, y.STR, y.STR),
    ("v1", y.STR, y.STR, y.STR, y.STR),
    ("-", y.STR, y.STR, y.STR, y.STR),
]


@pytest.mark.parametrize(
    ("text", "pyyaml", "go_v2", "go_v3", "core12"), READINGS, ids=[r[0] for r in READINGS]
)
def test_each_reader_resolves_a_plain_scalar_its_own_way(
    text: str, pyyaml: str, go_v2: str, go_v3: str, core12: str
) -> None:
    assert y.pyyaml_kind(text) == pyyaml
    assert y.go_yaml_v2_kind(text) == go_v2
    assert y.go_yaml_v3_kind(text) == go_v3
    assert y.yaml12_core_kind(text) == core12
    assert y.read_as_non_string(text) is any(kind != y.STR for kind in (pyyaml, go_v2, go_v3, core12))


@pytest.mark.parametrize("text", [row[0] for row in READINGS])
def test_written_strings_are_quoted_exactly_when_some_reader_would_not_read_a_string(text: str) -> None:
    written = dump_yaml({"value": text})
    assert yaml.safe_load(written) == {"value": text}
    plain = written.removeprefix("value: ").rstrip("\n")
    quoted = plain[:1] in ("'", '"')
    assert quoted is (y.read_as_non_string(text) or plain != text), written


def test_non_strings_are_written_plain_and_keys_are_quoted_like_values() -> None:
    assert dump_yaml({"count": 1, "flag": True, "none": None, "ratio": 1.5}) == (
        "count: 1\nflag: true\nnone: null\nratio: 1.5\n"
    )
    # A key `n` is the boolean false to Go's YAML 1.1 reader.
    assert dump_yaml({"n": "y"}) == "'n': 'y'\n"
