"""Benchmark: ``flyte-apps status -o json`` of 5,000 apps against ``kubectl get ksvc,revisions,pods -o json``.

The apps live in the fake API server (tests/fakes, in the benchmark process): 5,000 KServices as the
stack renders them, each with a ready Revision and one running replica pod. Our side is the
installed command, listing every app with its replicas and replica count; the floor is kubectl
reading the same three kinds from the same server (its default: pages of 500), when kubectl is
installed and answers; otherwise a Python floor that makes the same paged LISTs with the raw
``kubernetes`` client and prints them (``python -m bench.status_scale floor ...``), and the table says
which floor ran. Goals: at most 2x the floor's wall time, and one paged LIST per kind (no Revision
GET per app).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

from bench.measure import ROUNDS, VENV_BIN, Budget, Measurement, interleaved, progress, run_measured
from bench.report import FAIL, PASS, Row, compared, count, mib, no_more_than, seconds

if TYPE_CHECKING:
    from bench._fake_cluster import GatedFakeKubeApi

TITLE: Final = "status"
NOTE: Final = (
    "status: `.venv/bin/flyte-apps status -o json` of N apps (each a ready Revision and one running "
    "pod) in the fake API server, stdout to a file, process start included; floor = `kubectl get "
    "ksvc,revisions,pods -o json` against the same server (or, without a usable kubectl, the raw "
    "Python client's paged LISTs of the same kinds)."
)
APPS: Final = 5_000
BUDGET_S: Final = 150.0
RATIO_LIMIT: Final = 2.0
PAGE: Final = 500
"""Page size of ours (``flyte_apps.kube.api.DEFAULT_PAGE_SIZE``) and of kubectl (``--chunk-size``)."""
CLI: Final = VENV_BIN / "flyte-apps"
KINDS: Final = ("services", "revisions", "pods")


# --- the Python floor (a child process) -----------------------------------------------------------


def floor_main(args: argparse.Namespace) -> None:
    from kubernetes import client, config

    load = cast(Callable[..., Any], config.new_client_from_config)
    api = load(config_file=args.kubeconfig, persist_config=False)
    custom = client.CustomObjectsApi(api)
    core = client.CoreV1Api(api)
    items: list[Any] = []
    for plural in ("services", "revisions"):
        token = None
        while True:
            page: Any = custom.list_namespaced_custom_object(
                "serving.knative.dev", "v1", args.namespace, plural, limit=PAGE, _continue=token
            )
            items += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                break
    token = None
    while True:
        response: Any = core.list_namespaced_pod(
            args.namespace, limit=PAGE, _continue=token, _preload_content=False
        )
        pods = json.loads(response.data)
        items += pods.get("items") or []
        token = (pods.get("metadata") or {}).get("continue")
        if not token:
            break
    api.close()
    json.dump({"kind": "List", "apiVersion": "v1", "items": items}, sys.stdout, indent=4)


# --- the benchmark ---------------------------------------------------------------------------------


def _kubectl_argv(kubeconfig: Path, cache: Path) -> list[str] | None:
    from bench._fake_cluster import NAMESPACE

    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None
    return [
        kubectl,
        "--kubeconfig",
        str(kubeconfig),
        "--cache-dir",
        str(cache),
        "-n",
        NAMESPACE,
        "get",
        "ksvc,revisions,pods",
        "-o",
        "json",
    ]


def _floor_argv(kubeconfig: Path, workdir: Path) -> tuple[str, list[str]]:
    """kubectl if it answers the fake server, else the Python floor."""
    from bench._fake_cluster import NAMESPACE

    argv = _kubectl_argv(kubeconfig, workdir / "kubectl-cache")
    if argv is not None:
        probe = subprocess.run(argv, capture_output=True, check=False, timeout=120)
        if probe.returncode == 0:
            return "kubectl", argv
        progress(f"{TITLE}: kubectl did not answer ({probe.stderr.decode(errors='replace').strip()[:200]})")
    python = [
        sys.executable,
        "-m",
        "bench.status_scale",
        "floor",
        "--kubeconfig",
        str(kubeconfig),
        "--namespace",
        NAMESPACE,
    ]
    return "Python client", python


def _ours_argv(kubeconfig: Path) -> list[str]:
    from bench._fake_cluster import NAMESPACE

    return [
        str(CLI),
        "status",
        "-o",
        "json",
        "--kubeconfig",
        str(kubeconfig),
        "--namespace",
        NAMESPACE,
        "--base-domain",
        "apps.example.com",
    ]


def _check_ours(path: Path, apps: int) -> None:
    snapshots = json.loads(path.read_text(encoding="utf-8"))
    replicas = sum(len(s.get("replicas") or []) for s in snapshots)
    counted = sum(int(s["app"]["status"].get("currentReplicas", 0)) for s in snapshots)
    if len(snapshots) != apps or replicas != apps or counted != apps:
        msg = f"{path}: {len(snapshots)} apps, {replicas} replicas, {counted} counted (expected {apps} each)"
        raise RuntimeError(msg)


def _requests_of(
    server: GatedFakeKubeApi, run: Callable[[], Measurement]
) -> tuple[Measurement, dict[str, int]]:
    from bench._fake_cluster import count_requests

    before = count_requests(server)
    measurement = run()
    after = count_requests(server)
    return measurement, {key: after.get(key, 0) - before.get(key, 0) for key in after}


def run(workdir: Path) -> list[Row]:
    from bench._fake_cluster import deploy_apps, kubeconfig_of, running_fake

    workdir.mkdir(parents=True, exist_ok=True)
    budget = Budget(BUDGET_S)
    apps = APPS
    with running_fake(workdir / "cluster") as server:
        server.allow_anonymous = True  # kubectl sends no bearer token over plain HTTP
        progress(f"{TITLE}: deploying {apps:,} apps into the fake API server")
        deploy_apps(server, apps, replicas=1, pods=True)
        kubeconfig = kubeconfig_of(server)
        floor_name, floor_argv = _floor_argv(kubeconfig, workdir)
        requests: list[dict[str, int]] = []

        def ours(round_: int) -> Measurement:
            out = workdir / f"ours-{round_}.json"
            measurement, made = _requests_of(server, lambda: run_measured(_ours_argv(kubeconfig), stdout=out))
            _check_ours(out, apps)
            requests.append(made)
            return measurement

        def floor(round_: int) -> Measurement:
            return run_measured(floor_argv, stdout=workdir / f"floor-{round_}.json")

        progress(f"{TITLE}: {apps:,} apps, {ROUNDS} rounds against {floor_name}")
        ours_runs, floor_runs = interleaved([ours, floor])
    if budget.left() < 0:
        progress(f"{TITLE}: over its time cap by {-budget.left():.0f} s")
    return rows(apps, floor_name, ours_runs, floor_runs, requests[0])


def rows(
    apps: int, floor_name: str, ours: list[Measurement], floor: list[Measurement], requests: dict[str, int]
) -> list[Row]:
    label = f"{count(apps)} apps"
    pages = math.ceil(apps / PAGE)
    one_list_each = all(requests.get(f"list {kind}", 0) == pages for kind in KINDS) and not any(
        requests.get(f"get {kind}", 0) for kind in KINDS
    )
    made = ", ".join(f"{key} {value}" for key, value in sorted(requests.items()) if value)
    return [
        compared(
            TITLE,
            f"wall time vs {floor_name}",
            label,
            [m.wall_s for m in ours],
            [m.wall_s for m in floor],
            seconds,
            goal=f"<= {RATIO_LIMIT:g}x",
            check=no_more_than(RATIO_LIMIT),
        ),
        compared(TITLE, "CPU time", label, [m.cpu_s for m in ours], [m.cpu_s for m in floor], seconds),
        compared(
            TITLE, "peak RSS", label, [m.peak_rss_mib for m in ours], [m.peak_rss_mib for m in floor], mib
        ),
        Row(
            TITLE,
            "API requests per run (ours)",
            label,
            made,
            goal=f"one paged LIST per kind ({pages} pages), no GET",
            result=PASS if one_list_each else FAIL,
        ),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.status_scale", description=__doc__.split("\n")[0])
    sides = parser.add_subparsers(dest="side", required=True)
    floor = sides.add_parser("floor", help="the Python floor: paged LISTs of the three kinds, printed")
    floor.add_argument("--kubeconfig", required=True)
    floor.add_argument("--namespace", required=True)
    args = parser.parse_args(argv)
    floor_main(args)


if __name__ == "__main__":
    main()
