"""`make e2e-tools`: build the real engine's tools from Go modules into a cache outside the work tree.

Every tool of ``versions.toml`` is built by ``go build`` inside a copy of its wrapper module
(``tools/<wrapper>``: our go.mod and go.sum, and a small main where one is needed), with the Go module
cache as the only source. The result goes to ``<cache>/<tool>-<key>/`` where the key hashes the tool's
entry, its wrapper's files and ``go version``: a second run, and CI on the same machine, find it there
and build nothing. A directory is complete only once its ``built.json`` is written (the build happens
in a temporary directory that is renamed into place), so an interrupted build leaves nothing that
looks usable.

    python tests/e2e/build.py            # build what is missing, print the time each took
    python tests/e2e/build.py --check    # exit 0 when every tool is built, 1 (and what is missing) if not
    python tests/e2e/build.py --print    # the directory of each built tool
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

E2E_DIR: Final = Path(__file__).resolve().parent
VERSIONS_FILE: Final = E2E_DIR / "versions.toml"
WRAPPERS_DIR: Final = E2E_DIR / "tools"
CACHE_ENV: Final = "FLYTE_APPS_E2E_CACHE"
DEFAULT_CACHE: Final = Path.home() / ".cache" / "flyte-apps-e2e"
STAMP: Final = "built.json"
BIN: Final = "bin"
DATA: Final = "share"
GO_BUILD_TIMEOUT_S: Final = 3600
GO_QUERY_TIMEOUT_S: Final = 600
EXECUTABLE_MODE: Final = 0o755


class ToolError(Exception):
    """A tool cannot be built, or is not built yet."""


@dataclass(frozen=True)
class Tool:
    """One entry of ``versions.toml``."""

    name: str
    wrapper: str
    modules: tuple[str, ...]
    binaries: Mapping[str, str]
    tags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()
    module_files: Mapping[str, str] = field(default_factory=dict)
    module_files_from: str = ""
    data: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    generate: str = ""
    plugin_version: str = ""
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def wrapper_dir(self) -> Path:
        return WRAPPERS_DIR / self.wrapper


@dataclass(frozen=True)
class Built:
    """A tool's directory in the cache."""

    tool: Tool
    root: Path

    @property
    def bin(self) -> Path:
        return self.root / BIN

    @property
    def share(self) -> Path:
        return self.root / DATA

    def binary(self, name: str) -> Path:
        return self.bin / name


def load_tools(path: Path = VERSIONS_FILE) -> dict[str, Tool]:
    document = tomllib.loads(path.read_text())
    tools = {}
    for name, entry in document["tools"].items():
        tools[name] = Tool(
            name=name,
            wrapper=entry["wrapper"],
            modules=tuple(entry["modules"]),
            binaries=dict(entry["binaries"]),
            tags=tuple(entry.get("tags", ())),
            ldflags=tuple(entry.get("ldflags", ())),
            module_files=dict(entry.get("module_files", {})),
            module_files_from=entry.get("module_files_from", ""),
            data={module: dict(files) for module, files in entry.get("data", {}).items()},
            generate=entry.get("generate", ""),
            plugin_version=entry.get("plugin_version", ""),
            raw=entry,
        )
    return tools


def recorded_go_version(path: Path = VERSIONS_FILE) -> str:
    return str(tomllib.loads(path.read_text())["go"]["version"])


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def go_environment() -> dict[str, str]:
    """Builds read only the wrapper's go.sum and the module proxy; no cgo, no VCS stamping, no other Go."""
    env = dict(os.environ)
    env.update(
        CGO_ENABLED="0",
        GOTOOLCHAIN="local",
        GOWORK="off",
        GOFLAGS="-mod=readonly -buildvcs=false",
    )
    return env


def go_version() -> str:
    try:
        out = subprocess.run(
            ["go", "env", "GOVERSION"], capture_output=True, text=True, check=True, timeout=GO_QUERY_TIMEOUT_S
        )
    except FileNotFoundError:
        raise ToolError(
            "go is not on PATH: the e2e tools are built with Go (see tests/e2e/versions.toml)"
        ) from None
    return out.stdout.strip()


def wrapper_files(tool: Tool) -> list[Path]:
    """The wrapper's committed files (what a build copies), in a stable order."""
    ignored = {".gitignore"}
    return sorted(
        p
        for p in tool.wrapper_dir.rglob("*")
        if p.is_file() and p.name not in ignored and "__pycache__" not in p.parts
    )


def tool_key(tool: Tool, go: str) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps({"go": go, "entry": tool.raw}, sort_keys=True).encode())
    for path in wrapper_files(tool):
        digest.update(str(path.relative_to(tool.wrapper_dir)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def tool_dir(tool: Tool, go: str) -> Path:
    return cache_root() / f"{tool.name}-{tool_key(tool, go)}"


def locate(names: Iterable[str] | None = None) -> dict[str, Built]:
    """The built tools (all of ``versions.toml``, or ``names``); ToolError names every one missing."""
    tools = load_tools()
    wanted = list(names) if names is not None else list(tools)
    go = go_version()
    found: dict[str, Built] = {}
    missing = []
    for name in wanted:
        root = tool_dir(tools[name], go)
        if (root / STAMP).is_file():
            found[name] = Built(tools[name], root)
        else:
            missing.append(name)
    if missing:
        raise ToolError(f"not built yet: {', '.join(missing)} (run `make e2e-tools`)")
    return found


def module_dir(module: str, env: Mapping[str, str]) -> Path:
    """Where the Go module cache holds ``module@version`` (downloaded first if needed)."""
    out = subprocess.run(
        ["go", "mod", "download", "-json", module],
        capture_output=True,
        text=True,
        env=dict(env),
        timeout=GO_QUERY_TIMEOUT_S,
        check=False,
    )
    try:
        info = json.loads(out.stdout)
    except ValueError:
        raise ToolError(f"go mod download {module}: {out.stderr.strip() or out.stdout.strip()}") from None
    if out.returncode != 0 or "Dir" not in info:
        raise ToolError(f"go mod download {module}: {info.get('Error') or out.stderr.strip()}")
    return Path(info["Dir"])


def generate_kubernetes_provider_embeds(tool: Tool, src: Path, env: Mapping[str, str]) -> None:
    """The two files pulumi-kubernetes' main embeds, as its own generate step writes them: the
    committed schema with ``version`` set to the plugin version, and the terraform mapping."""
    provider = module_dir(tool.modules[0], env) / "cmd" / "pulumi-resource-kubernetes"
    schema = json.loads((provider / "schema.json").read_text())
    schema["version"] = tool.plugin_version
    (src / "schema-embed.json").write_text(json.dumps(schema, separators=(",", ":")))
    mapping = json.loads((provider / "terraform-mapping.json").read_text())
    (src / "terraform-mapping-embed.json").write_text(json.dumps(mapping, separators=(",", ":")))


GENERATORS: Final[Mapping[str, Callable[[Tool, Path, Mapping[str, str]], None]]] = {
    "kubernetes-provider-embeds": generate_kubernetes_provider_embeds,
}


def run_logged(argv: list[str], cwd: Path, env: Mapping[str, str], log: Path) -> None:
    with log.open("a") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        try:
            done = subprocess.run(
                argv, cwd=cwd, env=dict(env), stdout=out, stderr=subprocess.STDOUT, timeout=GO_BUILD_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            raise ToolError(f"{' '.join(argv[:3])} ran past {GO_BUILD_TIMEOUT_S} s (log: {log})") from None
    if done.returncode != 0:
        tail = log.read_text().splitlines()[-15:]
        raise ToolError(
            f"{' '.join(argv[:3])} failed (exit {done.returncode}); log {log}:\n" + "\n".join(tail)
        )


def build(tool: Tool, go: str) -> Path:
    """Build ``tool`` into its cache directory; returns it."""
    final = tool_dir(tool, go)
    final.parent.mkdir(parents=True, exist_ok=True)
    env = go_environment()
    work = Path(tempfile.mkdtemp(prefix=f".{tool.name}-", dir=final.parent))
    try:
        src = work / "src"
        shutil.copytree(tool.wrapper_dir, src, ignore=shutil.ignore_patterns(".gitignore"))
        if tool.generate:
            GENERATORS[tool.generate](tool, src, env)
        out = work / "out"
        (out / BIN).mkdir(parents=True)
        log = work / "build.log"
        ldflags = " ".join(["-s", "-w", *tool.ldflags])
        for binary, package in tool.binaries.items():
            argv = ["go", "build", "-trimpath", f"-ldflags={ldflags}", "-o", str(out / BIN / binary)]
            if tool.tags:
                argv.append(f"-tags={','.join(tool.tags)}")
            run_logged([*argv, package], src, env, log)
        if tool.module_files:
            base = module_dir(tool.module_files_from, env)
            for name, relative in tool.module_files.items():
                target = out / BIN / name
                shutil.copyfile(base / relative, target)
                target.chmod(EXECUTABLE_MODE)
        for module, files in tool.data.items():
            base = module_dir(module, env)
            for target_name, relative in files.items():
                target = out / DATA / target_name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(base / relative, target)
        shutil.copyfile(log, out / "build.log")
        (out / STAMP).write_text(
            json.dumps(
                {"tool": tool.name, "go": go, "modules": list(tool.modules), "entry": tool.raw}, indent=2
            )
        )
        if final.exists():
            shutil.rmtree(final)
        out.rename(final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 0 if every tool is built, else 1")
    parser.add_argument("--print", action="store_true", help="print each built tool's directory")
    parser.add_argument("tools", nargs="*", help="only these tools (default: all)")
    args = parser.parse_args(argv)
    tools = load_tools()
    names = args.tools or list(tools)
    unknown = [n for n in names if n not in tools]
    if unknown:
        parser.error(f"unknown tool(s) {', '.join(unknown)}; versions.toml has {', '.join(tools)}")
    try:
        if args.check or args.print:
            built = locate(names)
            if args.print:
                for name, entry in built.items():
                    print(f"{name}\t{entry.root}")
            return 0
        go = go_version()
        if go != recorded_go_version():
            print(
                f"e2e-tools: building with {go}; versions.toml records {recorded_go_version()}",
                file=sys.stderr,
            )
        started = time.monotonic()
        built_now = []
        for name in names:
            tool = tools[name]
            if (tool_dir(tool, go) / STAMP).is_file():
                continue
            print(f"e2e-tools: building {name} ({', '.join(tool.modules)}) ...", file=sys.stderr, flush=True)
            began = time.monotonic()
            build(tool, go)
            print(f"e2e-tools: built {name} in {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
            built_now.append(name)
        took = time.monotonic() - started
        if built_now:
            print(f"e2e-tools: built {len(built_now)} tool(s) in {took / 60:.1f} min; cache {cache_root()}")
        else:
            print(f"e2e-tools: every tool already built ({took:.1f} s); cache {cache_root()}")
    except ToolError as exc:
        print(f"e2e-tools: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
