"""The language hosts and consumer templates of versions.toml, checked without building anything: what
the pulumi tool builds and bundles, the bundle's place in the cache key and the build order, the
consumer templates against the versions named, and the environment a consumer program runs with;
the node's tools (every binary it runs built, the go.mod lines its wrappers copy, the Debian packages
and how their binaries find the libraries unpacked beside them)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
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


# -- the node's tools (tests/e2e/node): what versions.toml adds for running pods ----------------------

NODE_BINARIES = {
    "kubernetes": {"kubelet", "kube-scheduler", "kube-proxy"},
    "knative": {"queue", "activator", "autoscaler"},
    "containerd": {"containerd", "containerd-shim-runc-v2", "ctr"},
    "cni-plugins": {"bridge", "host-local", "loopback", "portmap"},
    "images": {"pack", "testapp", "pause"},
    "coredns": {"coredns"},
    "traefik": {"traefik"},
    "runc": {"runc"},
    "nftables": {"nft"},
}
COPIED_GO_MOD_LINES = {
    "traefik": (
        "github.com/abbot/go-http-auth => github.com/containous/go-http-auth "
        "v0.4.1-0.20200324110947-a37a7636d23e",
        "github.com/gorilla/mux => github.com/containous/mux v0.0.0-20250523120546-41b6ec3aed59",
        "github.com/mailgun/minheap => github.com/containous/minheap v0.0.0-20190809180810-6e71eb837595",
        "exclude github.com/tencentcloud/tencentcloud-sdk-go v3.0.83+incompatible",
    ),
    "containerd": (
        "github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc",
        "github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2",
    ),
}
"""What the modules' own go.mod files say and a wrapper does not inherit: Traefik v3.6.12's three
forks and its tencentcloud exclusion, containerd v2.0.14's exclusion of untagged go-spew/go-difflib."""
DEBIAN_VERSION = r"^(\d+:)?[0-9][A-Za-z0-9.+~-]*$"


def test_versions_toml_builds_every_binary_the_node_runs() -> None:
    from tests.e2e.node.node import DATA_PLANE_TOOLS, NODE_TOOLS

    entries = build.load_all()
    assert set(NODE_TOOLS) | set(DATA_PLANE_TOOLS) <= set(entries)
    for name, binaries in NODE_BINARIES.items():
        assert binaries <= set(entries[name].binaries), name


def test_each_binary_from_a_module_path_is_a_tool_of_its_wrapper() -> None:
    """A package built by module path must be a ``tool`` of the wrapper's go.mod: that is what makes
    ``go mod tidy`` keep its dependencies (and go.sum their sums) in the wrapper."""
    tools = build.load_tools()
    assert tools, "versions.toml names tools"
    for tool in tools.values():
        go_mod = (tool.wrapper_dir / "go.mod").read_text()
        declared = set(re.findall(r"^\s*(?:tool\s+)?([\w.-]+\.[\w./-]+/[\w./-]+)\s*$", go_mod, re.MULTILINE))
        for binary, package in tool.binaries.items():
            if not package.startswith("."):
                assert package in declared, f"{tool.wrapper}/go.mod: no `tool {package}` (for {binary})"


@pytest.mark.parametrize("wrapper", sorted(COPIED_GO_MOD_LINES))
def test_a_wrapper_copies_the_replace_and_exclude_lines_of_the_module_it_builds(wrapper: str) -> None:
    go_mod = " ".join((build.WRAPPERS_DIR / wrapper / "go.mod").read_text().split())
    assert COPIED_GO_MOD_LINES[wrapper], wrapper
    for line in COPIED_GO_MOD_LINES[wrapper]:
        assert line in go_mod, f"{wrapper}/go.mod lacks {line!r}"


def test_debian_tools_pin_exact_versions_and_name_binaries_inside_the_packages() -> None:
    debian = build.load_debian()
    assert set(debian) == {"runc", "nftables"}
    for tool in debian.values():
        assert tool.kind == build.DEBIAN and tool.packages and tool.check
        for package, version in tool.packages.items():
            assert re.fullmatch(r"[a-z0-9][a-z0-9.+-]+", package)
            assert re.match(DEBIAN_VERSION, version), f"{package}={version}"
        for relative in tool.binaries.values():
            assert not relative.startswith("/") and ".." not in relative


def test_a_debian_tools_key_is_its_entry_and_it_copies_no_files(tmp_path: Path) -> None:
    tool = build.load_debian()["nftables"]
    assert build.wrapper_files(tool) == []
    key = build.tool_key(tool, "go1.26.8")
    newer = build.Tool(
        name=tool.name,
        wrapper="",
        modules=(),
        binaries=tool.binaries,
        kind=build.DEBIAN,
        packages={**tool.packages, "nftables": "1.0.6-2+deb12u3"},
        raw={**tool.raw, "packages": {**tool.packages, "nftables": "1.0.6-2+deb12u3"}},
    )
    assert build.tool_key(newer, "go1.26.8") != key


def test_a_debian_binary_runs_with_the_libraries_unpacked_beside_it(tmp_path: Path) -> None:
    """The launcher finds the unpacked tree relative to itself (the cache directory is renamed into
    place after the build) and puts its library directories first."""
    out = tmp_path / "built"
    (out / build.BIN).mkdir(parents=True)
    libs = out / build.DEBIAN_ROOT / "usr" / "lib" / "x86_64-linux-gnu"
    libs.mkdir(parents=True)
    (libs / "libnftnl.so.11").write_bytes(b"")
    binary = out / build.DEBIAN_ROOT / "usr" / "sbin" / "tool"
    binary.parent.mkdir(parents=True)
    binary.write_text('#!/bin/sh\necho "$LD_LIBRARY_PATH|$1"\n')
    binary.chmod(0o755)
    found = build.library_dirs(out / build.DEBIAN_ROOT)
    assert found == [Path(build.DEBIAN_ROOT, "usr", "lib", "x86_64-linux-gnu")]
    launcher = out / build.BIN / "tool"
    launcher.write_text(build.launcher(binary.relative_to(out), found))
    launcher.chmod(0o755)
    moved = tmp_path / "moved"
    out.rename(moved)
    done = subprocess.run(
        [str(moved / build.BIN / "tool"), "arg"], capture_output=True, text=True, check=True
    )
    library_path, _, argument = done.stdout.strip().partition("|")
    assert Path(library_path.split(":")[0]).resolve() == (moved / found[0]).resolve()
    assert argument == "arg"


def test_locate_names_debian_tools_that_are_not_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(build.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(build, "go_version", lambda: "go1.26.8")
    with pytest.raises(build.ToolError, match="not built yet: runc, nftables"):
        build.locate(["runc", "nftables"])


def test_one_name_names_one_entry_across_tools_consumers_and_debian_tools(tmp_path: Path) -> None:
    versions = tmp_path / "versions.toml"
    versions.write_text(
        '[go]\nversion = "go1.26.8"\n'
        '[tools.runc]\nwrapper = "x"\nmodules = []\nbinaries = { runc = "." }\n'
        '[debian.runc]\npackages = { runc = "1" }\nbinaries = { runc = "usr/sbin/runc" }\n'
    )
    with pytest.raises(build.ToolError, match="runc both as a tool and as a Debian tool"):
        build.load_all(versions)
