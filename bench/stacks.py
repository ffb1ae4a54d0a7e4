"""Generated, valid stack configs of any size: a deterministic mix of the app shapes Flyte runs.

Every ``CYCLE`` consecutive apps hold the same mix (see ``app_entry``): running public apps, autoscaled
ones (rps and concurrency), private (``visibility: cluster-local``) ones, stopped ones (which get a
``RevisionReaper``), apps with Flyte secrets, env maps and lists, ports and resources. Apps are spread
over ``PROJECTS`` x ``DOMAINS``; names are unique, so no KService name collides or is hashed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import yaml

PREFIX: Final = "flyte-apps:"
PROJECTS: Final = ("flytesnacks", "ml-serving", "analytics", "growth", "platform")
DOMAINS: Final = ("development", "staging", "production")
CYCLE: Final = 20
"""Shape of app ``i`` is chosen by ``i % CYCLE``; the shares below are per cycle."""
STOPPED_SLOTS: Final = frozenset({7, 17})  # 10 % stopped
PRIVATE_SLOTS: Final = frozenset({3, 8, 13, 18})  # 20 % cluster-local
SECRET_SLOTS: Final = frozenset({1, 11, 15})  # 15 % with secrets
PLATFORM: Final[dict[str, Any]] = {
    "namespace": "flyte",
    "baseDomain": "apps.example.com",
    "scheme": "https",
    "defaultRequestTimeout": "300s",
    "maxRequestTimeout": "3600s",
    "defaultEnvVars": [
        {"FLYTE_AWS_ENDPOINT": "http://rustfs-svc.flyte.svc.cluster.local:9000"},
        {"_U_EP_OVERRIDE": "flyte-binary-http.flyte:8090"},
    ],
    "retainNamespace": True,
}


def app_entry(index: int) -> dict[str, Any]:
    """App ``index`` of every generated stack, as a user writes it under ``flyte-apps:apps``."""
    slot = index % CYCLE
    project = PROJECTS[index % len(PROJECTS)]
    domain = DOMAINS[(index // len(PROJECTS)) % len(DOMAINS)]
    container: dict[str, Any] = {
        "image": f"ghcr.io/acme/service-{index % 37}:1.{index % 11}.{index % 7}",
        "ports": [{"containerPort": 8080 + index % 3, "name": "h2c" if slot % 4 == 1 else "http1"}],
        "resources": {
            "requests": {"cpu": f"{100 + 50 * (index % 8)}m", "memory": f"{128 * (1 + index % 4)}Mi"},
            "limits": {"cpu": str(1 + index % 2), "memory": f"{256 * (1 + index % 4)}Mi"},
        },
    }
    if slot % 2 == 0:
        container["command"] = ["python", "-m", f"service_{index % 37}"]
        container["args"] = ["--port", str(8080 + index % 3), "--workers", str(1 + index % 4)]
        container["env"] = {"LOG_LEVEL": "info", "SHARD": str(index), "FEATURES": "a,b,c"}
    else:
        container["env"] = [{"name": "MODEL_URI", "value": f"s3://models/m{index}/v{index % 9}"}]
    entry: dict[str, Any] = {
        "name": f"app-{index:05d}",
        "project": project,
        "domain": domain,
        "container": container,
    }
    if slot % 3 == 0:
        entry["autoscaling"] = {
            "minReplicas": 0,
            "maxReplicas": 5 + index % 10,
            "metric": "rps",
            "target": 50,
            "scaledownPeriod": "90s",
        }
    elif slot % 3 == 1:
        entry["autoscaling"] = {"minReplicas": 1, "maxReplicas": 10, "metric": "concurrency", "target": 20}
    if slot % 5 == 2:
        entry["timeouts"] = {"request": "120s"}
    if slot in PRIVATE_SLOTS:
        entry["visibility"] = "cluster-local"
    if slot in STOPPED_SLOTS:
        entry["stopped"] = True
    if slot in SECRET_SLOTS:
        entry["secrets"] = [
            {"group": "model-registry", "key": "api-token", "mountRequirement": "ENV_VAR", "envVar": "TOKEN"},
            {"key": f"db-password-{index % 5}", "mountRequirement": "FILE"},
        ]
    return entry


def stack_config(apps: int) -> dict[str, Any]:
    """Config keys to values, as ``flyte_apps.cli.stackfile.read_stack_config`` returns them."""
    return {
        f"{PREFIX}platform": PLATFORM,
        f"{PREFIX}project": PROJECTS[0],
        f"{PREFIX}domain": DOMAINS[0],
        f"{PREFIX}apps": [app_entry(index) for index in range(apps)],
    }


def summary(apps: int = 1_000) -> str:
    """The mix of a generated stack, in words (for the benchmark notes)."""
    entries = [app_entry(index) for index in range(apps)]

    def share(kind: str, key: str, value: object = None) -> str:
        found = sum(1 for e in entries if key in e and (value is None or e[key] == value))
        return f"{found / apps:.0%} {kind}"

    pairs = len({(e["project"], e["domain"]) for e in entries})
    kinds = (
        share("stopped", "stopped", True),
        share("cluster-local", "visibility", "cluster-local"),
        share("autoscaled", "autoscaling"),
        share("with secrets", "secrets"),
    )
    return f"{', '.join(kinds)}, over {pairs} project/domain pairs"


def write_stack_file(apps: int, path: Path) -> Path:
    """A ``Pulumi.<stack>.yaml``-shaped file (block style, as people write them) of ``stack_config(apps)``.

    Written with libyaml's dumper when PyYAML has it: same YAML, many times faster to produce.
    """
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text = yaml.dump({"config": stack_config(apps)}, Dumper=dumper, sort_keys=False)
    path.write_text(text, encoding="utf-8")
    return path
