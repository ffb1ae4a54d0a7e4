"""``python -m tests.e2e.cluster``: a control plane to try a stack against by hand (`make
e2e-cluster-up`, `make e2e-cluster-down`), and the relay processes the control plane itself starts
(``_relay``, ``_in-netns``: hidden, not for people)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

from tests.e2e import build
from tests.e2e.cluster.control_plane import ControlPlane
from tests.e2e.cluster.processes import ClusterError, State
from tests.e2e.cluster.relays import IN_NETNS_COMMAND, RELAY_COMMAND, in_netns_main, relay_main

DEFAULT_DIR: Final = Path(tempfile.gettempdir()) / "flyte-apps-e2e-cluster"
COMMANDS: Final = (
    ("up", "start and wait until ready"),
    ("down", "stop what up started"),
    ("env", "print the environment"),
)


def print_environment(state: State) -> None:
    print(f"export KUBECONFIG={state.kubeconfig}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.e2e.cluster", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in COMMANDS:
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument(
            "--dir", type=Path, default=DEFAULT_DIR, help=f"work directory (default {DEFAULT_DIR})"
        )
    relay = sub.add_parser(RELAY_COMMAND, help=argparse.SUPPRESS)
    relay.add_argument("pairs", nargs="+")
    inner = sub.add_parser(IN_NETNS_COMMAND, help=argparse.SUPPRESS)
    inner.add_argument("--relay", action="append", default=[])
    inner.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command == RELAY_COMMAND:
        return relay_main(args.pairs)
    if args.command == IN_NETNS_COMMAND:
        command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        return in_netns_main(args.relay, command)
    try:
        if args.command == "up":
            started = time.monotonic()
            state = ControlPlane(args.dir).up()
            print(
                f"cluster: ready in {time.monotonic() - started:.0f} s; kubeconfig {state.kubeconfig}",
                file=sys.stderr,
            )
            print_environment(state)
        elif args.command == "env":
            print_environment(State.load(args.dir.resolve()))
        else:
            ControlPlane(args.dir, tools={}).down()
            print(f"cluster: stopped what {args.dir} recorded", file=sys.stderr)
    except (ClusterError, build.ToolError) as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
