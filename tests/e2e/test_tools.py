"""The language hosts and consumer templates of versions.toml, checked without building anything: what
the pulumi tool builds and bundles, the bundle's place in the cache key and the build order, the
consumer templates against the versions named, and the environment a consumer program runs with."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.e2e import build
from tests.e2e.test_harness import requirements

OUR_HOSTS = ("pulumi-language-python", "pulumi-language-nodejs", "pulumi-language-go")


def test_the_pulumi_tool_builds_our_three_language_hosts_from_its_wrapper() -> None:
    tool = build.load_tools()["pulumi"]
    for host in OUR_HOSTS:
        package = tool.binaries[host]
        assert package == f"./cmd/{host}"
        assert (tool.wrapper_dir / package / "main.go").is_file()


def test_the_yaml_host_is_built_on_its_own_and_bundled_next_to_the_cli() -> None:
    entries = build.load_all()
    assert entries["pulumi"].bundle == ("pulumi-yaml",)
    assert set(entries["pulumi-yaml"].binaries) == {"pulumi-language-yaml"}
    assert not set(entries["pulumi-yaml"].binaries) & set(entries["pulumi"].binaries)
    order = build.build_order(["pulumi"], entries)
    assert order == ["pulumi-yaml", "pulumi"]
    everything = build.build_order(list(entries), entries)
    assert sorted(everything) == sorted(entries)
    assert everything.index("pulumi-yaml") < everything.index("pulumi")


def test_the_yaml_wrapper_builds_with_the_clis_sdk() -> None:
    entries = build.load_all()
    cli = {m.split("@")[0]: m.split("@")[1] for m in entries["pulumi"].modules}
    yaml = {m.split("@")[0]: m.split("@")[1] for m in entries["pulumi-yaml"].modules}
    for module in ("github.com/pulumi/pulumi/pkg/v3", "github.com/pulumi/pulumi/sdk/v3"):
        assert yaml[module] == cli[module]


def test_a_bundled_tool_is_part_of_the_key_of_the_tool_that_bundles_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = build.load_all()
    for name in ("pulumi", "pulumi-yaml"):
        shutil.copytree(entries[name].wrapper_dir, tmp_path / "tools" / entries[name].wrapper)
    monkeypatch.setattr(build, "WRAPPERS_DIR", tmp_path / "tools")
    key = build.tool_key(entries["pulumi"], "go1.26.8", entries)
    yaml_go_sum = tmp_path / "tools" / "pulumi-yaml" / "go.sum"
    yaml_go_sum.write_text(yaml_go_sum.read_text() + "\n")
    assert build.tool_key(entries["pulumi"], "go1.26.8", entries) != key


def test_the_build_order_refuses_a_circle_and_an_unknown_bundle() -> None:
    a = build.Tool(name="a", wrapper="a", modules=(), binaries={"a": "."}, bundle=("b",))
    b = build.Tool(name="b", wrapper="b", modules=(), binaries={"b": "."}, bundle=("a",))
    with pytest.raises(build.ToolError, match="circle: a -> b -> a"):
        build.build_order(["a"], {"a": a, "b": b})
    with pytest.raises(build.ToolError, match=r"a bundles b, which versions\.toml does not name"):
        build.build_order(["a"], {"a": a})


def test_consumers_have_templates_and_names_of_their_own() -> None:
    tools = build.load_tools()
    consumers = build.load_consumers()
    assert set(consumers) == {"nodejs-consumer", "go-consumer"}
    assert not set(tools) & set(consumers)
    for consumer in consumers.values():
        assert consumer.kind in build.CONSUMER_KINDS
        assert consumer.source_dir.is_dir() and build.wrapper_files(consumer)


def test_the_npm_template_pins_exactly_what_versions_toml_names() -> None:
    consumer = build.load_consumers()["nodejs-consumer"]
    manifest = json.loads((consumer.source_dir / "package.json").read_text())
    lock = json.loads((consumer.source_dir / "package-lock.json").read_text())
    assert manifest["dependencies"] == consumer.npm
    assert lock["packages"][""]["dependencies"] == consumer.npm
    for package, version in consumer.npm.items():
        assert lock["packages"][f"node_modules/{package}"]["version"] == version
    assert (consumer.source_dir / "tsconfig.json").is_file()


def test_the_go_template_requires_exactly_what_versions_toml_names() -> None:
    consumer = build.load_consumers()["go-consumer"]
    required = requirements(consumer.source_dir / "go.mod")
    assert (consumer.source_dir / "go.sum").is_file() and (consumer.source_dir / "main.go").is_file()
    for module in consumer.modules:
        path, version = module.split("@")
        assert required.get(path) == version


def test_locate_names_consumers_that_are_not_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(build.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(build, "go_version", lambda: "go1.26.8")
    with pytest.raises(build.ToolError, match="not built yet: nodejs-consumer, go-consumer"):
        build.locate(["nodejs-consumer", "go-consumer"])


def test_a_consumer_runs_offline_with_the_caches_its_template_filled(tmp_path: Path) -> None:
    consumers = build.load_consumers()
    npm = build.Built(consumers["nodejs-consumer"], tmp_path / "npm")
    go = build.Built(consumers["go-consumer"], tmp_path / "go")
    env = build.consumer_environment([npm, go], tmp_path / "work")
    assert env["npm_config_cache"] == str(tmp_path / "npm" / "share" / build.NPM_CACHE)
    assert env["npm_config_offline"] == "true"
    assert env["GOMODCACHE"] == str(tmp_path / "go" / "share" / build.GO_MODULE_CACHE)
    assert env["GOCACHE"] == str(tmp_path / "go" / "share" / build.GO_BUILD_CACHE)
    assert env["GOPROXY"] == "off"
    assert env["CGO_ENABLED"] == "0"
    assert env["PIP_NO_INDEX"] == "1"
    assert build.consumer_environment([], tmp_path) == {"PIP_NO_INDEX": "1"}


def test_the_go_host_builds_programs_with_the_flags_the_template_cache_was_built_with() -> None:
    host = (build.load_tools()["pulumi"].wrapper_dir / "cmd" / "pulumi-language-go" / "main.go").read_text()
    assert '"build", "-buildvcs=false", "-trimpath", "-ldflags", "-w -s"' in host
    assert build.GO_PROGRAM_BUILD_FLAGS == ("-buildvcs=false", "-trimpath", "-ldflags=-w -s")
