"""``python -m tests.e2e.node``: try a node (``try``), or start one against a control plane of yours
(``up``, then ``down``); ``_holder`` is the mount namespace's holder process (hidden, not for people).

    python -m tests.e2e.node try [--dir DIR] [--stage pods|services|knative] [--app-image NAME ...]
    python -m tests.e2e.node up --dir DIR --server URL --kubeconfig F --ca-cert F --ca-key F [--data-plane]
    python -m tests.e2e.node down --dir DIR
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Final

from tests.e2e import build
from tests.e2e.node.tryout import STAGES, try_main

DEFAULT_DIR: Final = Path(tempfile.gettempdir()) / "flyte-apps-e2e-node"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    tried = sub.add_parser("try", help="a node on a control plane in a network namespace of its own")
    tried.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    tried.add_argument("--stage", choices=STAGES, default=STAGES[-1], help="the last stage to run")
    tried.add_argument(
        "--app-image", action="append", default=[], help="import the test app under this name too"
    )
    tried.add_argument("--hold", type=float, default=0.0, help="on a failure, wait this long before stopping")
    tried.add_argument(
        "--serve",
        type=float,
        default=0.0,
        help="after the stages pass, keep everything up this long (seconds)",
    )
    upped = sub.add_parser(
        "up", help="start a node against a running control plane (in this network namespace)"
    )
    upped.add_argument("--dir", type=Path, required=True)
    upped.add_argument("--server", required=True, help="the API server's URL, as the node dials it")
    upped.add_argument("--kubeconfig", type=Path, required=True, help="an admin kubeconfig")
    upped.add_argument("--ca-cert", type=Path, required=True)
    upped.add_argument("--ca-key", type=Path, required=True)
    upped.add_argument("--app-image", action="append", default=[])
    upped.add_argument("--queue-image", action="append", default=[])
    upped.add_argument(
        "--data-plane", action="store_true", help="also Knative's activator, autoscaler and Traefik"
    )
    downed = sub.add_parser("down", help="stop the node recorded in --dir and check nothing is left")
    downed.add_argument("--dir", type=Path, required=True)
    holder = sub.add_parser("_holder", help=argparse.SUPPRESS)
    holder.add_argument("--dir", type=Path, required=True)
    holder.add_argument("--shadow", action="append", default=[])
    args = parser.parse_args(argv)

    from tests.e2e.node import mounts
    from tests.e2e.node.configs import Layout
    from tests.e2e.node.node import ControlPlaneAccess, Node, NodeError, NodeRecord, stop_node

    if args.command == "_holder":
        layout = Layout(args.dir.resolve())
        shadows = dict(s.split("=", 1) for s in args.shadow)
        return mounts.holder_main(layout.root, layout.host, shadows)
    if args.command == "try":
        return try_main(args.dir, args.stage, args.app_image, args.hold, args.serve)
    try:
        if args.command == "up":
            access = ControlPlaneAccess(args.server, args.kubeconfig, args.ca_cert, args.ca_key)
            node = Node(args.dir, access, app_images=args.app_image, queue_images=args.queue_image)
            node.up()
            if args.data_plane:
                node.start_data_plane()
            print(f"node: up; `python -m tests.e2e.node down --dir {args.dir}` stops it", file=sys.stderr)
        else:
            layout = Layout(args.dir.resolve())
            record = NodeRecord.load(layout.record)
            problems = stop_node(record)
            if problems:
                raise NodeError("the node left things behind:\n  " + "\n  ".join(problems))
            print("node: stopped; nothing left", file=sys.stderr)
    except (NodeError, build.ToolError) as exc:
        print(f"node: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
