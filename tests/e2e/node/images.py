"""Every image a pod runs, built here from binaries the tools built and imported into containerd: no
registry, no pull (containerd sends pulls to a closed port, ``configs.CLOSED_REGISTRY``).

``pack`` (``tools/images/cmd/pack``, go-containerregistry's API) writes each image as an OCI image
layout in a tar archive: one uncompressed layer with the binary, an entrypoint and a numeric user.
containerd imports an OCI layout keeping its manifest digest (a docker archive's manifest is made
anew), so a digest reference (``name@sha256:...``) resolves to what was packed. One archive can name
its image several times: the test app is imported under every name the stacks use.

The user is numeric and not root where Knative requires it: queue-proxy, the activator and the
autoscaler run with ``runAsNonRoot: true``, which kubelet can only check against a numeric user.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from tests.e2e.build import Built
from tests.e2e.cluster.processes import run_checked

NONROOT_UID: Final = "65532"
"""What ko (Knative's own image builder) gives its images."""
PAUSE_UID: Final = "65535"
LOCAL_REGISTRY: Final = "ko.local"
"""In Knative's default ``registries-skipping-tag-resolving``: no digest is looked up for these."""
KNATIVE_MODULE: Final = "knative.dev/serving"
PACK_TIMEOUT_S: Final = 300.0
IMPORT_TIMEOUT_S: Final = 300.0
APP_DIRECTORY: Final = "/app"
COMMAND_DIRECTORY: Final = "/usr/local/bin"
"""On the image's PATH (pack sets PATH=/usr/local/bin:/usr/bin:/bin): where a command the stacks run goes."""


@dataclass(frozen=True)
class Image:
    """One image: its names, its entrypoint binary (image path -> file here) and its user."""

    key: str
    names: tuple[str, ...]
    entrypoint: str
    files: Mapping[str, Path]
    user: str = NONROOT_UID
    directories: Mapping[str, str] = field(default_factory=lambda: {"/tmp": "1777"})

    @property
    def name(self) -> str:
        """The image's first name: the one configurations refer to."""
        return self.names[0]


def normalized(name: str) -> str:
    """``name`` as containerd's CRI looks an image up (Docker's rules): a first component without a
    dot, a colon or ``localhost`` is a Docker Hub path (``library/`` for a single one); no tag or
    digest means ``:latest``."""
    first, _, rest = name.partition("/")
    if not rest:
        name = f"docker.io/library/{name}"
    elif "." not in first and ":" not in first and first != "localhost":
        name = f"docker.io/{name}"
    last = name.rsplit("/", 1)[-1]
    if "@" not in last and ":" not in last:
        name = f"{name}:latest"
    return name


def knative_version(knative: Built) -> str:
    for module in knative.tool.modules:
        path, _, version = module.partition("@")
        if path == KNATIVE_MODULE:
            return version
    msg = f"the knative tool does not build {KNATIVE_MODULE}"
    raise ValueError(msg)


def binary_image(key: str, names: Sequence[str], binary: Path, user: str = NONROOT_UID) -> Image:
    entrypoint = f"{APP_DIRECTORY}/{binary.name}"
    return Image(key=key, names=tuple(names), entrypoint=entrypoint, files={entrypoint: binary}, user=user)


@dataclass(frozen=True)
class NodeImages:
    """The images of one node, by role."""

    pause: Image
    app: Image
    queue: Image
    activator: Image
    autoscaler: Image

    def all(self) -> list[Image]:
        return [self.pause, self.app, self.queue, self.activator, self.autoscaler]


def node_images(
    images: Built,
    knative: Built,
    *,
    app_names: Sequence[str] = (),
    app_commands: Sequence[str] = (),
    queue_names: Sequence[str] = (),
) -> NodeImages:
    """The pause and test-app images (``images`` tool) and Knative's data plane (``knative`` tool),
    named ``ko.local/...``; the test app also under ``app_names`` (the images the stacks name) and at
    ``/usr/local/bin/<command>`` for each of ``app_commands`` (the commands the stacks' apps run, such
    as ``python``: the test app stands in for them too, reporting the arguments it was given), the
    queue-proxy also under ``queue_names`` (whatever ``config-deployment`` names)."""
    version = knative_version(knative)
    serving = f"{LOCAL_REGISTRY}/{KNATIVE_MODULE}/cmd"
    app = binary_image(
        "testapp", [f"{LOCAL_REGISTRY}/flyte-apps-e2e/testapp:1", *app_names], images.binary("testapp")
    )
    commands = {f"{COMMAND_DIRECTORY}/{command}": images.binary("testapp") for command in app_commands}
    return NodeImages(
        pause=binary_image(
            "pause", [f"{LOCAL_REGISTRY}/flyte-apps-e2e/pause:1"], images.binary("pause"), PAUSE_UID
        ),
        app=dataclasses.replace(app, files={**app.files, **commands}),
        queue=binary_image("queue", [f"{serving}/queue:{version}", *queue_names], knative.binary("queue")),
        activator=binary_image("activator", [f"{serving}/activator:{version}"], knative.binary("activator")),
        autoscaler=binary_image(
            "autoscaler", [f"{serving}/autoscaler:{version}"], knative.binary("autoscaler")
        ),
    )


def pack(packer: Path, image: Image, archive: Path) -> str:
    """Write ``image`` to ``archive``; its manifest digest."""
    argv = [str(packer), "-o", str(archive), "-entrypoint", image.entrypoint, "-user", image.user]
    for name in image.names:
        argv += ["-name", name]
    for target, source in image.files.items():
        argv += ["-file", f"{target}={source}"]
    for target, mode in image.directories.items():
        argv += ["-dir", f"{target}={mode}"]
    done = run_checked(argv, what=f"pack {image.key}", timeout=PACK_TIMEOUT_S)
    return str(json.loads(done.stdout)["digest"])


def ctr_argv(ctr: Path, socket: Path) -> list[str]:
    """``ctr`` on the node's containerd, in the namespace the CRI plugin uses (``k8s.io``)."""
    return [str(ctr), "--address", str(socket), "--namespace", "k8s.io"]


def import_archive(ctr: Path, socket: Path, archive: Path) -> None:
    """``ctr images import`` into the namespace the CRI plugin uses (``k8s.io``)."""
    run_checked(
        [*ctr_argv(ctr, socket), "images", "import", str(archive)],
        what=f"ctr images import {archive.name}",
        timeout=IMPORT_TIMEOUT_S,
    )


def imported(ctr: Path, socket: Path) -> dict[str, str]:
    """Image name -> manifest digest, as containerd's ``k8s.io`` namespace has them."""
    done = run_checked(
        [*ctr_argv(ctr, socket), "images", "list"], what="ctr images list", timeout=IMPORT_TIMEOUT_S
    )
    found = {}
    for line in done.stdout.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 3 and fields[2].startswith("sha256:"):
            found[fields[0]] = fields[2]
    return found


def stack_values(stack_files: Sequence[Path], key: str) -> list[object]:
    """Every value of ``key`` anywhere in the stack files (YAML), in order."""
    import yaml

    found: list[object] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for name, item in value.items():
                if name == key:
                    found.append(item)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in stack_files:
        for document in yaml.safe_load_all(path.read_text()):
            walk(document)
    return found


def stack_commands(stack_files: Sequence[Path]) -> list[str]:
    """The first word of every ``command:`` in the stack files that is a bare name (``python``), once
    each: the commands the test app is installed as."""
    words = [c[0] for c in stack_values(stack_files, "command") if isinstance(c, list) and c]
    return list(dict.fromkeys(w for w in words if isinstance(w, str) and "/" not in w))


def stack_images(stack_files: Sequence[Path]) -> list[str]:
    """Every ``image:`` string in the stack files (YAML), once each, in order: the names the test app
    is imported under."""
    return list(dict.fromkeys(i for i in stack_values(stack_files, "image") if isinstance(i, str)))
