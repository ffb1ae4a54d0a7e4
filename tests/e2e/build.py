"""`make e2e-tools`: build the real engine's tools from Go modules into a cache outside the work tree.

Every tool of ``versions.toml`` is built by ``go build`` inside a copy of its wrapper module
(``tools/<wrapper>``: our go.mod and go.sum, and a small main where one is needed), with the Go module
cache as the only source. A tool may bundle others (their binaries are copied into its ``bin/``, where
the CLI looks for its bundled language hosts). The result goes to ``<cache>/<tool>-<key>/`` where the
key hashes the tool's entry, its wrapper's files, the keys of what it bundles and ``go version``: a
second run, and CI on the same machine, find it there and build nothing. A directory is complete only
once its ``built.json`` is written (the build happens in a temporary directory that is renamed into
place), so an interrupted build leaves nothing that looks usable.

The consumers of ``versions.toml`` are prepared the same way, keyed by their template's files
(``consumers/<template>``): what a TypeScript or Go program that consumes a package needs offline, in
``share/``. For the npm one, ``npm ci`` of the committed package-lock.json into an npm cache
(``share/npm-cache``); for the Go one, ``go mod tidy`` of the committed go.mod (which must not change
it) into a module cache (``share/gomodcache``), and a build of the template into a warm build cache
(``share/gocache``).

The Debian packages of ``versions.toml`` (``[debian.*]``: what cannot be built from Go modules without
cgo, e.g. runc and nft) are fetched at their pinned versions with ``apt-get download`` (the signed
archive's checksums) and unpacked with ``dpkg-deb -x`` into ``root/``, never installed: each binary gets
a ``bin/`` entry (a link, or a script that puts the unpacked libraries first on ``LD_LIBRARY_PATH``), and
the build runs it once (``check``) so a library the machine lacks fails here, not in a test.

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
CONSUMERS_DIR: Final = E2E_DIR / "consumers"
CACHE_ENV: Final = "FLYTE_APPS_E2E_CACHE"
DEFAULT_CACHE: Final = Path.home() / ".cache" / "flyte-apps-e2e"
STAMP: Final = "built.json"
BIN: Final = "bin"
DATA: Final = "share"
GO_BUILD_TIMEOUT_S: Final = 3600
GO_QUERY_TIMEOUT_S: Final = 600
EXECUTABLE_MODE: Final = 0o755
# What an entry builds: a Go tool from its wrapper module, or a consumer's caches from its template.
GO_TOOL: Final = "go"
NPM_CONSUMER: Final = "npm-consumer"
GO_CONSUMER: Final = "go-consumer"
CONSUMER_KINDS: Final = (NPM_CONSUMER, GO_CONSUMER)
DEBIAN: Final = "debian"
# Where a Debian tool's packages are unpacked, beside bin/.
DEBIAN_ROOT: Final = "root"
APT_TIMEOUT_S: Final = 600
# Where a consumer's caches go, under share/.
NPM_CACHE: Final = "npm-cache"
GO_MODULE_CACHE: Final = "gomodcache"
GO_BUILD_CACHE: Final = "gocache"
# The flags the Go language host builds a program with (cmd/pulumi-language-go): the template is built
# with the same ones, so its build cache serves the program's dependencies.
GO_PROGRAM_BUILD_FLAGS: Final = ("-buildvcs=false", "-trimpath", "-ldflags=-w -s")


class ToolError(Exception):
    """A tool cannot be built, or is not built yet."""


@dataclass(frozen=True)
class Tool:
    """One entry of ``versions.toml``: a tool (``[tools.*]``) or a consumer (``[consumers.*]``)."""

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
    bundle: tuple[str, ...] = ()
    kind: str = GO_TOOL
    template: str = ""
    npm: Mapping[str, str] = field(default_factory=dict)
    packages: Mapping[str, str] = field(default_factory=dict)
    """Debian package -> exact version (a ``[debian.*]`` entry)."""
    check: tuple[str, ...] = ()
    """Arguments each binary of a Debian tool is run with once built (e.g. ``--version``)."""
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def wrapper_dir(self) -> Path:
        return WRAPPERS_DIR / self.wrapper

    @property
    def source_dir(self) -> Path:
        """What a build copies: the wrapper module of a tool, the template of a consumer."""
        return CONSUMERS_DIR / self.template if self.kind in CONSUMER_KINDS else self.wrapper_dir


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
    """The Go tools (``[tools.*]``)."""
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
            bundle=tuple(entry.get("bundle", ())),
            raw=entry,
        )
    return tools


def load_consumers(path: Path = VERSIONS_FILE) -> dict[str, Tool]:
    """The consumer templates (``[consumers.*]``), each an entry whose build fills caches."""
    document = tomllib.loads(path.read_text())
    consumers = {}
    for name, entry in document.get("consumers", {}).items():
        if entry["kind"] not in CONSUMER_KINDS:
            raise ToolError(f"consumer {name}: kind must be one of {', '.join(CONSUMER_KINDS)}")
        consumers[name] = Tool(
            name=name,
            wrapper="",
            modules=tuple(entry.get("modules", ())),
            binaries={},
            kind=entry["kind"],
            template=entry["template"],
            npm=dict(entry.get("npm", {})),
            raw=entry,
        )
    return consumers


def load_debian(path: Path = VERSIONS_FILE) -> dict[str, Tool]:
    """The Debian tools (``[debian.*]``): packages unpacked, not installed; binaries by path in them."""
    document = tomllib.loads(path.read_text())
    found = {}
    for name, entry in document.get("debian", {}).items():
        if not entry.get("packages") or not entry.get("binaries"):
            raise ToolError(f"debian tool {name}: needs packages and binaries")
        found[name] = Tool(
            name=name,
            wrapper="",
            modules=(),
            binaries=dict(entry["binaries"]),
            kind=DEBIAN,
            packages=dict(entry["packages"]),
            check=tuple(entry.get("check", ())),
            raw=entry,
        )
    return found


def load_all(path: Path = VERSIONS_FILE) -> dict[str, Tool]:
    """Every entry, tools, consumers, then Debian tools; one name names one entry."""
    tables = {"tool": load_tools(path), "consumer": load_consumers(path), "Debian tool": load_debian(path)}
    seen: dict[str, str] = {}
    for kind, entries in tables.items():
        for name in entries:
            if name in seen:
                raise ToolError(f"versions.toml names {name} both as a {seen[name]} and as a {kind}")
            seen[name] = kind
    return {name: tool for entries in tables.values() for name, tool in entries.items()}


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
    """The wrapper's (or template's) committed files (what a build copies), in a stable order."""
    if tool.kind == DEBIAN:
        return []  # its entry (package versions) is all there is
    ignored = {".gitignore"}
    return sorted(
        p
        for p in tool.source_dir.rglob("*")
        if p.is_file() and p.name not in ignored and "__pycache__" not in p.parts
    )


def tool_key(tool: Tool, go: str, entries: Mapping[str, Tool] | None = None) -> str:
    """The hash a tool's directory is named by: its entry, its files, ``go`` and the keys of the tools
    it bundles (looked up in ``entries``, by default ``versions.toml``)."""
    digest = hashlib.sha256()
    digest.update(json.dumps({"go": go, "entry": tool.raw}, sort_keys=True).encode())
    for path in wrapper_files(tool):
        digest.update(str(path.relative_to(tool.source_dir)).encode() + b"\0" + path.read_bytes() + b"\0")
    if tool.bundle:
        known = load_all() if entries is None else entries
        for name in tool.bundle:
            digest.update(f"bundle {name} {tool_key(known[name], go, known)}\0".encode())
    return digest.hexdigest()[:16]


def tool_dir(tool: Tool, go: str, entries: Mapping[str, Tool] | None = None) -> Path:
    return cache_root() / f"{tool.name}-{tool_key(tool, go, entries)}"


def build_order(names: Iterable[str], entries: Mapping[str, Tool]) -> list[str]:
    """``names`` with what each bundles before it, each once."""
    order: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in path:
            raise ToolError(f"versions.toml bundles in a circle: {' -> '.join((*path, name))}")
        if name in order:
            return
        if name not in entries:
            raise ToolError(f"{path[-1] if path else name} bundles {name}, which versions.toml does not name")
        for bundled in entries[name].bundle:
            visit(bundled, (*path, name))
        order.append(name)

    for name in names:
        visit(name, ())
    return order


def locate(names: Iterable[str] | None = None) -> dict[str, Built]:
    """The built tools and consumers (all of ``versions.toml``, or ``names``); ToolError names every
    one missing."""
    entries = load_all()
    wanted = list(names) if names is not None else list(entries)
    go = go_version()
    found: dict[str, Built] = {}
    missing = []
    for name in wanted:
        root = tool_dir(entries[name], go, entries)
        if (root / STAMP).is_file():
            found[name] = Built(entries[name], root)
        else:
            missing.append(name)
    if missing:
        raise ToolError(f"not built yet: {', '.join(missing)} (run `make e2e-tools`)")
    return found


def consumer_environment(consumers: Iterable[Built], work: Path) -> dict[str, str]:
    """The variables under which a consumer program's package managers find what its template's build
    cached, and nothing else: npm offline with ``share/npm-cache`` (its logs in ``work``), Go with
    ``share/gomodcache``, no proxy, and ``share/gocache`` with the settings it was built with (no cgo,
    this Go); pip without an index, since a component package's virtualenv is made beforehand (with
    PyPI) and the CLI reinstalls it at ``pulumi package add``. `node`, `npm` and `go` must be on PATH."""
    env = {"PIP_NO_INDEX": "1"}
    for built in consumers:
        if built.tool.kind == NPM_CONSUMER:
            env.update(
                npm_config_cache=str(built.share / NPM_CACHE),
                npm_config_offline="true",
                npm_config_logs_dir=str(work / "npm-logs"),
                npm_config_update_notifier="false",
                npm_config_audit="false",
                npm_config_fund="false",
            )
        elif built.tool.kind == GO_CONSUMER:
            env.update(
                GOMODCACHE=str(built.share / GO_MODULE_CACHE),
                GOCACHE=str(built.share / GO_BUILD_CACHE),
                GOPROXY="off",
                GOFLAGS="-modcacherw",
                GOTOOLCHAIN="local",
                GOWORK="off",
                CGO_ENABLED="0",
            )
    return env


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


def run_logged(
    argv: list[str], cwd: Path, env: Mapping[str, str], log: Path, timeout: float = GO_BUILD_TIMEOUT_S
) -> None:
    with log.open("a") as out:
        out.write(f"$ {' '.join(argv)}\n")
        out.flush()
        try:
            done = subprocess.run(
                argv, cwd=cwd, env=dict(env), stdout=out, stderr=subprocess.STDOUT, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            raise ToolError(f"{' '.join(argv[:3])} ran past {timeout:.0f} s (log: {log})") from None
    if done.returncode != 0:
        tail = log.read_text().splitlines()[-15:]
        raise ToolError(
            f"{' '.join(argv[:3])} failed (exit {done.returncode}); log {log}:\n" + "\n".join(tail)
        )


def build_go_tool(
    tool: Tool, go: str, entries: Mapping[str, Tool], src: Path, out: Path, log: Path
) -> dict[str, str]:
    """``go build`` of each binary in the wrapper; the module files and data it names; the binaries of
    the tools it bundles."""
    env = go_environment()
    if tool.generate:
        GENERATORS[tool.generate](tool, src, env)
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
    for name in tool.bundle:
        bundled = tool_dir(entries[name], go, entries)
        if not (bundled / STAMP).is_file():
            raise ToolError(f"{tool.name} bundles {name}, which is not built")
        for executable in sorted((bundled / BIN).iterdir()):
            if (out / BIN / executable.name).exists():
                raise ToolError(f"{tool.name} and {name}, which it bundles, both have {executable.name}")
            shutil.copy2(executable, out / BIN / executable.name)
    return {}


def tool_version(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=GO_QUERY_TIMEOUT_S, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolError(f"{' '.join(argv)}: {exc}") from None
    return done.stdout.strip()


def build_npm_consumer(
    tool: Tool, go: str, entries: Mapping[str, Tool], src: Path, out: Path, log: Path
) -> dict[str, str]:
    """``npm ci`` of the template's package-lock.json into ``share/npm-cache`` (install scripts off:
    the cache is what is kept); ``npm install --offline`` with that cache then needs no registry."""
    npm = shutil.which("npm")
    if npm is None:
        raise ToolError("npm is not on PATH: the Node.js consumer template is installed with npm")
    env = dict(os.environ)
    env.update(npm_config_update_notifier="false", npm_config_audit="false", npm_config_fund="false")
    cache = out / DATA / NPM_CACHE
    argv = [npm, "ci", "--cache", str(cache), "--logs-dir", str(log.parent / "npm-logs"), "--ignore-scripts"]
    run_logged([*argv, "--loglevel=warn"], src, env, log)
    return {"node": tool_version(["node", "--version"]), "npm": tool_version([npm, "--version"])}


def build_go_consumer(
    tool: Tool, go: str, entries: Mapping[str, Tool], src: Path, out: Path, log: Path
) -> dict[str, str]:
    """``go mod tidy`` of the template into ``share/gomodcache`` (everything `go mod tidy` of a program
    that adds a package's SDK then finds without a proxy); the template must be tidy already. Then a
    build of it, with the Go host's flags, into ``share/gocache``, so a program's dependencies are
    compiled once here, not at its first ``pulumi up``."""
    env = go_environment()
    env.update(
        GOMODCACHE=str(out / DATA / GO_MODULE_CACHE),
        GOCACHE=str(out / DATA / GO_BUILD_CACHE),
        GOFLAGS="-modcacherw -buildvcs=false",
    )
    committed = {name: (src / name).read_bytes() for name in ("go.mod", "go.sum")}
    run_logged(["go", "mod", "tidy"], src, env, log)
    changed = [name for name, data in committed.items() if (src / name).read_bytes() != data]
    if changed:
        raise ToolError(
            f"go mod tidy changes {' and '.join(changed)} of tests/e2e/consumers/{tool.template}: "
            "commit the tidy ones"
        )
    run_logged(
        ["go", "build", "-mod=readonly", *GO_PROGRAM_BUILD_FLAGS, "-o", os.devnull, "."], src, env, log
    )
    return {}


def launcher(binary: Path, library_dirs: Iterable[Path]) -> str:
    """A script that runs ``binary`` (relative to the script's own directory, so the cache directory
    may move) with the unpacked libraries before the system's."""
    here = Path(BIN)
    relative = [os.path.relpath(d, here) for d in library_dirs]
    path = ":".join(f"$here/{d}" for d in relative)
    target = os.path.relpath(binary, here)
    return (
        "#!/bin/sh\n"
        "# Runs a binary unpacked from a Debian package with the libraries unpacked beside it.\n"
        'here=$(dirname "$(readlink -f "$0")")\n'
        f'LD_LIBRARY_PATH="{path}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}" exec "$here/{target}" "$@"\n'
    )


def library_dirs(root: Path) -> list[Path]:
    """The directories under ``root`` (relative to its parent) that hold shared libraries."""
    dirs = {p.parent for p in root.rglob("*.so*") if p.is_file() or p.is_symlink()}
    return sorted(d.relative_to(root.parent) for d in dirs)


def build_debian(
    tool: Tool, go: str, entries: Mapping[str, Tool], src: Path, out: Path, log: Path
) -> dict[str, str]:
    """``apt-get update`` into lists of the build's own, then ``apt-get download`` of each pinned package
    (apt checks it against the signed archive), unpacked
    with ``dpkg-deb -x`` into ``root/``; a ``bin/`` entry per binary, run once with ``check``."""
    for needed in ("apt-get", "dpkg-deb"):
        if shutil.which(needed) is None:
            raise ToolError(f"{needed} is not on PATH: {tool.name} is unpacked from Debian packages")
    src.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    wanted = [f"{package}={version}" for package, version in sorted(tool.packages.items())]
    # apt's package lists and cache of this build's own, fetched fresh: a machine whose lists are
    # missing or stale still finds the pinned versions, and the machine's own apt state is not touched.
    state = src.parent / "apt"
    for directory in (state / "lists" / "partial", state / "cache" / "archives" / "partial"):
        directory.mkdir(parents=True, exist_ok=True)
    apt = [
        "apt-get",
        "-q",
        "-o",
        f"Dir::State::Lists={state / 'lists'}",
        "-o",
        f"Dir::Cache={state / 'cache'}",
        "-o",
        "Debug::NoLocking=1",
    ]
    run_logged([*apt, "update"], src, env, log, APT_TIMEOUT_S)
    run_logged([*apt, "download", *wanted], src, env, log, APT_TIMEOUT_S)
    root = out / DEBIAN_ROOT
    details = {}
    for deb in sorted(src.glob("*.deb")):
        details[f"sha256 {deb.name}"] = hashlib.sha256(deb.read_bytes()).hexdigest()
        run_logged(["dpkg-deb", "-x", str(deb), str(root)], src, env, log, APT_TIMEOUT_S)
    if len(details) != len(wanted):
        raise ToolError(f"{tool.name}: apt-get download gave {len(details)} packages for {len(wanted)}")
    libraries = library_dirs(root)
    for name, relative in tool.binaries.items():
        binary = root / relative
        if not binary.is_file():
            raise ToolError(f"{tool.name}: no {relative} in {', '.join(sorted(tool.packages))}")
        target = out / BIN / name
        if libraries:
            target.write_text(launcher(binary.relative_to(out), libraries))
            target.chmod(EXECUTABLE_MODE)
        else:
            target.symlink_to(Path("..") / binary.relative_to(out))
        if tool.check:
            details[f"{name} {' '.join(tool.check)}"] = tool_version([str(target), *tool.check])
    return details


BUILDERS: Final[
    Mapping[str, Callable[[Tool, str, Mapping[str, Tool], Path, Path, Path], Mapping[str, str]]]
] = {
    GO_TOOL: build_go_tool,
    NPM_CONSUMER: build_npm_consumer,
    GO_CONSUMER: build_go_consumer,
    DEBIAN: build_debian,
}


def build(tool: Tool, go: str, entries: Mapping[str, Tool] | None = None) -> Path:
    """Build ``tool`` (a tool or a consumer) into its cache directory; returns it."""
    known = load_all() if entries is None else entries
    final = tool_dir(tool, go, known)
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{tool.name}-", dir=final.parent))
    try:
        src = work / "src"
        if tool.kind != DEBIAN:
            shutil.copytree(tool.source_dir, src, ignore=shutil.ignore_patterns(".gitignore"))
        out = work / "out"
        (out / BIN).mkdir(parents=True)
        log = work / "build.log"
        log.touch()
        details = BUILDERS[tool.kind](tool, go, known, src, out, log)
        shutil.copyfile(log, out / "build.log")
        stamp = {"tool": tool.name, "go": go, "modules": list(tool.modules), "entry": tool.raw, **details}
        (out / STAMP).write_text(json.dumps(stamp, indent=2))
        if final.exists():
            shutil.rmtree(final)
        out.rename(final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def describe(tool: Tool) -> str:
    """What a tool is built from, for the progress lines."""
    if tool.kind == GO_TOOL:
        return ", ".join(tool.modules)
    if tool.kind == DEBIAN:
        return "Debian " + ", ".join(f"{p}={v}" for p, v in sorted(tool.packages.items()))
    return f"consumers/{tool.template}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 0 if every tool is built, else 1")
    parser.add_argument("--print", action="store_true", help="print each built tool's directory")
    parser.add_argument("tools", nargs="*", help="only these tools or consumers (default: all)")
    args = parser.parse_args(argv)
    try:
        entries = load_all()
    except ToolError as exc:
        print(f"e2e-tools: {exc}", file=sys.stderr)
        return 1
    names = args.tools or list(entries)
    unknown = [n for n in names if n not in entries]
    if unknown:
        parser.error(f"unknown tool(s) {', '.join(unknown)}; versions.toml has {', '.join(entries)}")
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
        for name in build_order(names, entries):
            tool = entries[name]
            if (tool_dir(tool, go, entries) / STAMP).is_file():
                continue
            what = describe(tool)
            print(f"e2e-tools: building {name} ({what}) ...", file=sys.stderr, flush=True)
            began = time.monotonic()
            build(tool, go, entries)
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
