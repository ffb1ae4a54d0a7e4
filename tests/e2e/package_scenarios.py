"""The component package through the real engine: programs in other languages add it and deploy apps.

Each consumer (``consumer_program``: YAML, TypeScript, Go) is a Pulumi project of its own in the work
directory that runs ``pulumi package add`` on ``components/plugin`` of this checkout and deploys the
same two apps, one of them stopped, into a namespace of its own through an explicit Kubernetes provider
(no KUBECONFIG in the environment). The scenario asserts that

- the live objects equal what ``flyte-apps render`` prints for a stack file with the same apps (what the
  stack-config program deploys: the main scenarios prove that),
- the stopped app's reaper (the package's own custom resource) waited for its stop revision,
- a second ``pulumi up`` changes nothing (``--expect-no-changes``),
- a bad input fails the preview with our message naming the input, and nothing is registered,
- ``pulumi destroy`` removes what the consumer created,

and that ``pulumi package get-schema`` prints the committed schema. The YAML consumer's ``FlyteApps``
owns Knative's config patches (a stopped app needs ``allow-zero-initial-scale``); the TypeScript and Go
consumers, two ``FlyteApp`` beside a Namespace of their own, run after it (or after the main stack).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import yaml

from tests.e2e.outcome import check

if TYPE_CHECKING:
    from tests.e2e.run import Suite

REPO: Final = Path(__file__).resolve().parents[2]
PLUGIN: Final = REPO / "components" / "plugin"
CONSUMER_TEMPLATES: Final = Path(__file__).resolve().parent / "consumers"
CONSUMER_STACK: Final = "consumer"
CONSUMER_TIMEOUT_S: Final = 900.0
PORT_CONFIG: Final = "port"
GOOD_PORT: Final = 8080
BAD_PORT: Final = 70000
WEB_IMAGE: Final = "ghcr.io/example/web:1.0"
UI_IMAGE: Final = "ghcr.io/example/ui:2.0"
PROJECT: Final = "consumers"
KNATIVE: Final = {"manageConfig": True}
DOMAIN: Final = "development"


def apps(port: int, namespace: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The platform settings and the two apps every consumer deploys (as a stack file writes them)."""
    platform = {"namespace": namespace, "baseDomain": "example.com", "scheme": "http"}
    web = {
        "name": "web",
        "project": PROJECT,
        "domain": DOMAIN,
        "container": {
            "image": WEB_IMAGE,
            "ports": [{"containerPort": port}],
            "env": [{"name": "MODE", "value": "serve"}, {"name": "WORKERS", "value": "2"}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
        },
        "autoscaling": {"minReplicas": 0, "maxReplicas": 3, "metric": "rps", "target": 20},
        "timeouts": {"request": "120s"},
    }
    ui = {
        "name": "ui",
        "project": PROJECT,
        "domain": DOMAIN,
        "container": {"image": UI_IMAGE, "ports": [{"containerPort": 3000}]},
        "stopped": True,
    }
    return platform, [web, ui]


@dataclass(frozen=True)
class Consumer:
    """One language's consumer program."""

    language: str
    write: Callable[[Path, str], None]
    """Writes the project (Pulumi.yaml and program) into the directory, for the namespace."""
    whole_stack: bool
    """Deploys a ``FlyteApps`` (namespace included) rather than ``FlyteApp``s beside its own Namespace."""
    npm: bool = False
    """Runs ``npm ci`` first (from the npm cache ``make e2e-tools`` filled)."""
    install: bool = False
    """Runs ``pulumi install`` first (the program's virtualenv, from the wheelhouse)."""


def write_yaml_consumer(directory: Path, namespace: str) -> None:
    platform, (web, ui) = apps(GOOD_PORT, namespace)
    web["container"]["ports"] = [{"containerPort": "${port}"}]
    program = {
        "name": namespace,
        "runtime": "yaml",
        "config": {PORT_CONFIG: {"type": "integer", "default": GOOD_PORT}, "kubeconfig": {"type": "string"}},
        "resources": {
            "cluster": {"type": "pulumi:providers:kubernetes", "properties": {"kubeconfig": "${kubeconfig}"}},
            "apps": {
                "type": "flyte:apps:FlyteApps",
                "properties": {
                    "platform": platform,
                    # The whole-stack piece: Knative's config patches (a stopped app needs
                    # allow-zero-initial-scale), owned here, as a stack file's `flyte-apps:knative`.
                    "knative": KNATIVE,
                    "apps": [web, ui],
                    "kubeconfig": "${kubeconfig}",
                },
                "options": {"providers": ["${cluster}"]},
            },
        },
        "outputs": {"apps": "${apps.apps}"},
    }
    (directory / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))


PORT_SENTINEL: Final = -424242
"""Stands for the ``port`` config value in the generated TypeScript and Go programs."""
KUBECONFIG_SENTINEL: Final = "@kubeconfig@"
"""Stands for the ``kubeconfig`` config value there."""
PYTHON_SDK: Final = "3.272.0"
"""The Python consumer's pulumi (requirements.lock's pin; in the wheelhouse ``run.py`` fills)."""
SDK_GO_MODULE: Final = "example.com/pulumi-flyte/sdk/go/flyte"
"""Where the Go SDK generated by ``pulumi package add`` lives (the codegen's default for a package
without ``language.go.importBasePath``), linked by a ``replace`` to ``sdks/flyte``."""


def consumer_apps(namespace: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The apps with the sentinels the TypeScript and Go programs replace by their config values."""
    platform, (web, ui) = apps(PORT_SENTINEL, namespace)
    ui["kubeconfig"] = KUBECONFIG_SENTINEL
    return platform, [{**web, "platform": platform}, {**ui, "platform": platform}]


def write_typescript_consumer(directory: Path, namespace: str) -> None:
    for name in ("package.json", "package-lock.json", "tsconfig.json"):
        shutil.copy(CONSUMER_TEMPLATES / "nodejs" / name, directory / name)
    (directory / "Pulumi.yaml").write_text(f"name: {namespace}\nruntime: nodejs\n")
    _, (web, ui) = consumer_apps(namespace)

    def literal(args: dict[str, Any]) -> str:
        text = json.dumps(args, indent=4)
        return text.replace(str(PORT_SENTINEL), "port").replace(json.dumps(KUBECONFIG_SENTINEL), "kubeconfig")

    program = f"""import * as pulumi from "@pulumi/pulumi";
import * as flyte from "@pulumi/flyte";

const config = new pulumi.Config();
const kubeconfig = config.require("kubeconfig");
const port = config.requireNumber("{PORT_CONFIG}");
// The consumer's own cluster provider and namespace (the core SDK's classes: no @pulumi/kubernetes).
class Cluster extends pulumi.ProviderResource {{
    constructor(name: string, props: pulumi.Inputs) {{
        super("kubernetes", name, props);
    }}
}}
class Namespace extends pulumi.CustomResource {{
    constructor(name: string, props: pulumi.Inputs, opts: pulumi.CustomResourceOptions) {{
        super("kubernetes:core/v1:Namespace", name, props, opts);
    }}
}}
const cluster = new Cluster("cluster", {{ kubeconfig }});
const namespace = new Namespace(
    "namespace",
    {{ apiVersion: "v1", kind: "Namespace", metadata: {{ name: "{namespace}" }} }},
    {{ provider: cluster }},
);
const options = {{ providers: {{ kubernetes: cluster }}, dependsOn: [namespace] }};
const web = new flyte.apps.FlyteApp("web", {literal(web)}, options);
const ui = new flyte.apps.FlyteApp("ui", {literal(ui)}, options);
export const webUrl = web.publicUrl;
export const uiSha = ui.specSha;
"""
    (directory / "index.ts").write_text(program)


def flyte_app_schema() -> tuple[dict[str, Any], dict[str, Any]]:
    """The committed schema's ``FlyteApp`` inputs and its types: what the SDKs' classes are made of."""
    document = json.loads((PLUGIN / "schema.json").read_text())
    return document["resources"]["flyte:apps:FlyteApp"]["inputProperties"], document["types"]


def go_name(key: str) -> str:
    """A schema property's Go field name (the codegen capitalizes the first letter)."""
    return key[0].upper() + key[1:]


def go_value(value: Any, prop: dict[str, Any], types: dict[str, Any], *, element: bool = False) -> str:
    """``value`` as a Go literal of the generated SDK's input types, by the schema's ``prop``."""
    if "$ref" in prop:
        token = prop["$ref"].rsplit("/", 1)[-1]
        properties = types[token]["properties"]
        fields = ", ".join(
            f"{key[0].upper()}{key[1:]}: {go_value(item, properties[key], types)}"
            for key, item in value.items()
        )
        return f"{'' if element else '&'}apps.{token.rsplit(':', 1)[-1]}Args{{{fields}}}"
    kind = prop["type"]
    if kind == "string":
        return f"pulumi.String({json.dumps(value)})"
    if kind == "integer":
        return f"pulumi.Int({value})"
    if kind == "number":
        return f"pulumi.Float64({value})"
    if kind == "boolean":
        return f"pulumi.Bool({str(value).lower()})"
    if kind == "array":
        items = prop["items"]
        if "$ref" in items:
            name = items["$ref"].rsplit(":", 1)[-1]
            inner = ", ".join(go_value(item, items, types, element=True) for item in value)
            return f"apps.{name}Array{{{inner}}}"
        return "pulumi.StringArray{" + ", ".join(go_value(item, items, types) for item in value) + "}"
    if kind == "object":
        entries = ", ".join(
            f"{json.dumps(key)}: {go_value(item, prop['additionalProperties'], types)}"
            for key, item in value.items()
        )
        return f"pulumi.StringMap{{{entries}}}"
    msg = f"no Go literal for {prop}"
    raise ValueError(msg)


def write_go_consumer(directory: Path, namespace: str) -> None:
    for name in ("go.mod", "go.sum"):
        shutil.copy(CONSUMER_TEMPLATES / "go" / name, directory / name)
    (directory / "Pulumi.yaml").write_text(f"name: {namespace}\nruntime: go\n")
    inputs, types = flyte_app_schema()
    _, (web, ui) = consumer_apps(namespace)

    def args(app: dict[str, Any]) -> str:
        fields = ",\n\t\t".join(
            f"{go_name(key)}: {go_value(item, inputs[key], types)}" for key, item in app.items()
        )
        text = f"&apps.FlyteAppArgs{{\n\t\t{fields},\n\t}}"
        text = text.replace(f"pulumi.Int({PORT_SENTINEL})", "pulumi.Int(port)")
        return text.replace(f"pulumi.String({json.dumps(KUBECONFIG_SENTINEL)})", "pulumi.String(kubeconfig)")

    program = f"""package main

import (
\t"strconv"

\t"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

\t"{SDK_GO_MODULE}/apps"
)

// The consumer's own cluster provider and namespace (the core SDK's registration: no Kubernetes SDK).
type provider struct{{ pulumi.ProviderResourceState }}

type object struct{{ pulumi.CustomResourceState }}

func main() {{
\tpulumi.Run(func(ctx *pulumi.Context) error {{
\t\tkubeconfig, _ := ctx.GetConfig("{namespace}:kubeconfig")
\t\tportText, _ := ctx.GetConfig("{namespace}:{PORT_CONFIG}")
\t\tport, err := strconv.Atoi(portText)
\t\tif err != nil {{
\t\t\treturn err
\t\t}}
\t\tvar cluster provider
\t\terr = ctx.RegisterResource("pulumi:providers:kubernetes", "cluster",
\t\t\tpulumi.Map{{"kubeconfig": pulumi.String(kubeconfig)}}, &cluster)
\t\tif err != nil {{
\t\t\treturn err
\t\t}}
\t\tvar namespace object
\t\terr = ctx.RegisterResource("kubernetes:core/v1:Namespace", "namespace", pulumi.Map{{
\t\t\t"apiVersion": pulumi.String("v1"),
\t\t\t"kind":       pulumi.String("Namespace"),
\t\t\t"metadata":   pulumi.Map{{"name": pulumi.String("{namespace}")}},
\t\t}}, &namespace, pulumi.Provider(&cluster))
\t\tif err != nil {{
\t\t\treturn err
\t\t}}
\t\twaits := pulumi.DependsOn([]pulumi.Resource{{&namespace}})
\t\toptions := []pulumi.ResourceOption{{pulumi.Providers(&cluster), waits}}
\t\tweb, err := apps.NewFlyteApp(ctx, "web", {args(web)}, options...)
\t\tif err != nil {{
\t\t\treturn err
\t\t}}
\t\tui, err := apps.NewFlyteApp(ctx, "ui", {args(ui)}, options...)
\t\tif err != nil {{
\t\t\treturn err
\t\t}}
\t\tctx.Export("webUrl", web.PublicUrl)
\t\tctx.Export("uiSha", ui.SpecSha)
\t\treturn nil
\t}})
}}
"""
    (directory / "main.go").write_text(program)


def python_name(key: str) -> str:
    """A schema property's Python argument name (the codegen's snake case)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def python_value(value: Any, prop: dict[str, Any], types: dict[str, Any]) -> str:
    """``value`` as a Python literal of the generated SDK's input classes, by the schema's ``prop``."""
    if "$ref" in prop:
        token = prop["$ref"].rsplit("/", 1)[-1]
        properties = types[token]["properties"]
        fields = ", ".join(
            f"{python_name(key)}={python_value(item, properties[key], types)}" for key, item in value.items()
        )
        return f"apps.{token.rsplit(':', 1)[-1]}Args({fields})"
    if prop.get("type") == "array":
        return "[" + ", ".join(python_value(item, prop["items"], types) for item in value) + "]"
    if prop.get("type") == "object":
        return json.dumps(value)
    return repr(value)


def write_python_consumer(directory: Path, namespace: str) -> None:
    (directory / "Pulumi.yaml").write_text(
        f"name: {namespace}\nruntime:\n  name: python\n  options: {{toolchain: pip, virtualenv: venv}}\n"
    )
    (directory / "requirements.txt").write_text(f"pulumi=={PYTHON_SDK}\n")
    inputs, types = flyte_app_schema()
    _, (web, ui) = consumer_apps(namespace)

    def args(app: dict[str, Any]) -> str:
        text = ",\n    ".join(
            f"{python_name(key)}={python_value(item, inputs[key], types)}" for key, item in app.items()
        )
        return text.replace(str(PORT_SENTINEL), "port").replace(repr(KUBECONFIG_SENTINEL), "kubeconfig")

    program = f"""\"\"\"A Python consumer of the component package (the generated pulumi_flyte SDK).\"\"\"

import pulumi
from pulumi_flyte import apps

config = pulumi.Config()
kubeconfig = config.require("kubeconfig")
port = config.require_int("{PORT_CONFIG}")
# The program's own cluster provider and namespace (the core SDK's classes: no pulumi_kubernetes).
cluster = pulumi.ProviderResource("kubernetes", "cluster", {{"kubeconfig": kubeconfig}})
namespace = pulumi.CustomResource(
    "kubernetes:core/v1:Namespace",
    "namespace",
    {{"apiVersion": "v1", "kind": "Namespace", "metadata": {{"name": "{namespace}"}}}},
    opts=pulumi.ResourceOptions(provider=cluster),
)
options = pulumi.ResourceOptions(providers={{"kubernetes": cluster}}, depends_on=[namespace])
web = apps.FlyteApp(
    "web",
    {args(web)},
    opts=options,
)
ui = apps.FlyteApp(
    "ui",
    {args(ui)},
    opts=options,
)
pulumi.export("webUrl", web.public_url)
pulumi.export("uiSha", ui.spec_sha)
"""
    (directory / "__main__.py").write_text(program)


CONSUMERS: Final = {
    "yaml": Consumer("yaml", write_yaml_consumer, whole_stack=True),
    "typescript": Consumer("typescript", write_typescript_consumer, whole_stack=False, npm=True),
    "go": Consumer("go", write_go_consumer, whole_stack=False),
    "python": Consumer("python", write_python_consumer, whole_stack=False, install=True),
}


def reference_stack(suite: Suite, stack: str, namespace: str, port: int, *, knative: bool) -> None:
    """A stack file of the stack-config program with the consumer's apps: what ``render`` compares with."""
    platform, app_list = apps(port, namespace)
    document = {"config": {"flyte-apps:platform": platform, "flyte-apps:apps": app_list}}
    if knative:
        document["config"]["flyte-apps:knative"] = KNATIVE
    suite.stack_file(stack).write_text(yaml.safe_dump(document, sort_keys=False))


def consumer_pulumi(suite: Suite, directory: Path, *args: str, check_rc: bool = True) -> Any:
    argv = [str(suite.tools["pulumi"].binary("pulumi")), *args, "--non-interactive", "--color=never"]
    return suite.run(argv, timeout=CONSUMER_TIMEOUT_S, cwd=directory, check_rc=check_rc)


def scenario_consumer(suite: Suite, consumer: Consumer) -> str:
    namespace = f"consumer-{consumer.language}"
    directory = suite.work / namespace
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    consumer.write(directory, namespace)
    if consumer.npm:
        suite.run(["npm", "ci", "--no-audit", "--no-fund"], timeout=CONSUMER_TIMEOUT_S, cwd=directory)
    if consumer.install:
        consumer_pulumi(suite, directory, "install")
    consumer_pulumi(suite, directory, "stack", "init", CONSUMER_STACK)
    consumer_pulumi(suite, directory, "config", "set", "--path", PORT_CONFIG, str(GOOD_PORT))
    consumer_pulumi(suite, directory, "config", "set", "kubeconfig", str(suite.plane.kubeconfig))
    consumer_pulumi(suite, directory, "package", "add", str(PLUGIN))
    served = json.loads(consumer_pulumi(suite, directory, "package", "get-schema", str(PLUGIN)).stdout)
    committed = json.loads((PLUGIN / "schema.json").read_text())
    check(served == committed, "`pulumi package get-schema` differs from components/plugin/schema.json")
    consumer_pulumi(suite, directory, "up", "--yes", "--skip-preview")
    reference = f"ref-{consumer.language}"
    reference_stack(suite, reference, namespace, GOOD_PORT, knative=consumer.whole_stack)
    compared = suite.compare_with_render(reference, kinds=None if consumer.whole_stack else {"Service"})
    consumer_pulumi(suite, directory, "up", "--yes", "--expect-no-changes", "--diff")
    consumer_pulumi(suite, directory, "config", "set", "--path", PORT_CONFIG, str(BAD_PORT))
    bad = consumer_pulumi(suite, directory, "preview", check_rc=False)
    output = bad.stdout + bad.stderr
    expected_path = (
        "apps[0].container.ports[0].containerPort"
        if consumer.whole_stack
        else ("container.ports[0].containerPort")
    )
    check(bad.returncode != 0, f"a bad input was not refused:\n{output[-2000:]}")
    check(expected_path in output, f"the error does not name {expected_path}:\n{output[-2000:]}")
    consumer_pulumi(suite, directory, "config", "set", "--path", PORT_CONFIG, str(GOOD_PORT))
    state = json.loads(consumer_pulumi(suite, directory, "stack", "export").stdout)
    resources = state["deployment"]["resources"]
    reapers = [r for r in resources if r["type"] == "flyte:apps:RevisionReaper"]
    check(len(reapers) == 1, f"not one reaper for the stopped app: {sorted({r['type'] for r in resources})}")
    stop_revision = reapers[0].get("outputs", {}).get("stopRevision")
    check(bool(stop_revision), f"the reaper waited for no stop revision: {reapers[0].get('outputs')}")
    consumer_pulumi(suite, directory, "destroy", "--yes", "--skip-preview")
    left = suite.get("services.serving.knative.dev", namespace=namespace)["items"]
    check(not left, f"KServices left after destroy: {[s['metadata']['name'] for s in left]}")
    return f"{compared} objects equal to render; no changes on a second run; bad input named"


def package_scenarios() -> list[tuple[str, Callable[[Suite], str]]]:
    """One scenario per consumer language, named ``package-<language>``."""

    def scenario(consumer: Consumer) -> Callable[[Suite], str]:
        return lambda suite: scenario_consumer(suite, consumer)

    return [(f"package-{name}", scenario(consumer)) for name, consumer in CONSUMERS.items()]
