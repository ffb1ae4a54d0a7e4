"""Knative Serving on the control plane: its CRDs, ConfigMaps and webhook configurations from its
module's YAML, and its controller, webhook and autoscaler as processes in network namespaces of their own.

Nothing from Knative's ``config/core/deployments/`` is applied (there is no kubelet to run it): the
webhook is reached through an ``ExternalName`` Service ``webhook`` -> ``127.0.0.1`` with the webhook
configurations' service port set to ours (the API server refuses loopback Endpoints, but dials an
ExternalName Service's name at the configuration's port; TLS is still checked against
``webhook.knative-serving.svc``, which Knative's own certificate names).

Every Knative process binds all interfaces, two of them on a fixed ``:8080`` (the controller's health
probes, the autoscaler's stats server), so each runs in a network namespace of its own with only
``lo`` up, its loopback joined to the API server's by relays (``relays.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from tests.e2e.cluster.kubectl import Kubectl
from tests.e2e.cluster.processes import (
    LOOPBACK,
    Supervisor,
    free_port,
    network_namespace_prefix,
    wait_until,
)
from tests.e2e.cluster.relays import in_netns_argv, relay_argv

KNATIVE_NAMESPACE: Final = "knative-serving"
WEBHOOK_SERVICE: Final = "webhook"
WEBHOOK_PORT_IN_NAMESPACE: Final = 8443
WEBHOOK_CONFIGURATIONS: Final = ("defaulting", "resource-validation", "configmap-validation")
WEBHOOK_NAMES: Final = frozenset(
    {
        "webhook.serving.knative.dev",
        "validation.webhook.serving.knative.dev",
        "config.webhook.serving.knative.dev",
    }
)
AUTOSCALER_POD_IP: Final = "192.0.2.10"
"""The autoscaler writes its own Endpoints with this address (the API server refuses loopback); with
one autoscaler nothing ever dials it (a TEST-NET-1 address, RFC 5737)."""
QUEUE_IMAGE: Final = "registry.example.com/knative/queue-proxy:v0.48.2"
"""config-deployment needs a queue-proxy image; no pod runs here, so any name does."""
REGISTRIES_SKIPPING_TAG_RESOLVING: Final = (
    "kind.local,ko.local,dev.local,ghcr.io,docker.io,index.docker.io,registry.example.com,example.com,"
    "nvcr.io,quay.io"
)
"""Knative resolves image tags to digests over the network unless the registry is listed here."""
SMOKE_NAMESPACE: Final = "flyte-apps-e2e-smoke"
CRDS_ESTABLISHED_S: Final = 60.0
RELAY_READY_S: Final = 30.0
WEBHOOK_READY_S: Final = 90.0
KNATIVE_READY_S: Final = 120.0


@dataclass(frozen=True)
class Knative:
    """Installs and starts Knative Serving against the API server on ``apiserver_port``."""

    kubectl: Kubectl
    supervisor: Supervisor
    share: Path
    """The built ``knative`` tool's ``share/knative``: the YAML of the module's ``config/``."""
    binary: Callable[[str], str]
    """A Knative binary's path by name (controller, webhook, autoscaler)."""
    workdir: Path
    apiserver_port: int

    def documents(self, relative: str) -> list[dict[str, Any]]:
        return [d for d in yaml.safe_load_all((self.share / relative).read_text()) if d]

    def install(self) -> None:
        self.kubectl.apply(self.documents("namespace.yaml"))
        crds = [
            d for f in sorted((self.share / "crds").glob("*.yaml")) for d in self.documents(f"crds/{f.name}")
        ]
        self.kubectl.apply(crds)
        self.kubectl(
            "wait",
            "--for=condition=Established",
            "crd",
            *[d["metadata"]["name"] for d in crds],
            f"--timeout={CRDS_ESTABLISHED_S:.0f}s",
        )
        # Before the webhook configurations: their config validation refuses writes until the webhook runs.
        self.kubectl.apply(installed_configmaps(self.share))
        self.kubectl.apply(self.documents("webhooks/secret.yaml"))
        webhook_port = free_port()
        self.kubectl.apply([self.webhook_service(webhook_port)])
        configurations = []
        for name in WEBHOOK_CONFIGURATIONS:
            for document in self.documents(f"webhooks/{name}.yaml"):
                for hook in document["webhooks"]:
                    hook["clientConfig"]["service"]["port"] = webhook_port
                configurations.append(document)
        self.kubectl.apply(configurations)
        self.start_processes(webhook_port)
        self.smoke_test()

    def reset_configmaps(self) -> None:
        """Knative's ConfigMaps back to what ``install`` wrote (every key a stack patched in is gone),
        for a scenario that must start from a Knative nothing else has touched."""
        reset_configmaps(self.kubectl, self.share)

    def webhook_service(self, port: int) -> dict[str, Any]:
        """The ``webhook`` Service: an ExternalName for loopback, at the port the relay listens on."""
        return {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": WEBHOOK_SERVICE, "namespace": KNATIVE_NAMESPACE},
            "spec": {
                "type": "ExternalName",
                "externalName": LOOPBACK,
                "ports": [{"name": "https-webhook", "port": port}],
            },
        }

    def start_processes(self, webhook_port: int) -> None:
        """The relay beside the API server, then the webhook (and its CA bundle), the controller and
        the autoscaler, each in a network namespace of its own."""
        api_socket = self.workdir / "api.sock"
        webhook_socket = self.workdir / "webhook.sock"
        api = f"tcp:{LOOPBACK}:{self.apiserver_port}"
        self.supervisor.start(
            "relay",
            relay_argv([f"unix:{api_socket}={api}", f"tcp:{LOOPBACK}:{webhook_port}=unix:{webhook_socket}"]),
        )
        wait_until("the relay", api_socket.exists, RELAY_READY_S, self.supervisor.dead)
        netns = network_namespace_prefix()
        to_api = f"{api}=unix:{api_socket}"
        env = {
            "SYSTEM_NAMESPACE": KNATIVE_NAMESPACE,
            "CONFIG_LOGGING_NAME": "config-logging",
            "CONFIG_OBSERVABILITY_NAME": "config-observability",
            "KUBECONFIG": str(self.kubectl.kubeconfig),
        }
        self.supervisor.start(
            "knative-webhook",
            in_netns_argv(
                netns,
                [to_api, f"unix:{webhook_socket}=tcp:{LOOPBACK}:{WEBHOOK_PORT_IN_NAMESPACE}"],
                [self.binary("webhook")],
            ),
            {
                **env,
                "POD_NAME": "webhook-e2e",
                "WEBHOOK_NAME": WEBHOOK_SERVICE,
                "WEBHOOK_PORT": str(WEBHOOK_PORT_IN_NAMESPACE),
            },
        )
        wait_until(
            "Knative's webhook (the CA bundle in its configurations)",
            self.webhooks_have_ca_bundle,
            WEBHOOK_READY_S,
            self.supervisor.dead,
        )
        self.supervisor.start(
            "knative-controller",
            in_netns_argv(netns, [to_api], [self.binary("controller")]),
            {**env, "POD_NAME": "controller-e2e"},
        )
        self.supervisor.start(
            "knative-autoscaler",
            in_netns_argv(netns, [to_api], [self.binary("autoscaler")]),
            {**env, "POD_NAME": "autoscaler-e2e", "POD_IP": AUTOSCALER_POD_IP},
        )

    def webhooks_have_ca_bundle(self) -> bool:
        found = {}
        for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
            for item in self.kubectl.get_json(kind)["items"]:
                found[item["metadata"]["name"]] = all(
                    h["clientConfig"].get("caBundle") for h in item["webhooks"]
                )
        return all(found.get(n) for n in WEBHOOK_NAMES)

    def smoke_test(self) -> None:
        """A KService in a namespace of its own: defaulted by the webhook, reconciled by the controller
        into a Revision and a Deployment, its PodAutoscaler given conditions by the autoscaler."""
        self.kubectl("create", "namespace", SMOKE_NAMESPACE)
        service = {
            "apiVersion": "serving.knative.dev/v1",
            "kind": "Service",
            "metadata": {"name": "smoke", "namespace": SMOKE_NAMESPACE},
            "spec": {"template": {"spec": {"containers": [{"image": "registry.example.com/smoke:1"}]}}},
        }

        def created() -> bool:
            return self.kubectl("create", "-f", "-", stdin=json.dumps(service), check=False).returncode == 0

        wait_until("Knative's webhook admitting a KService", created, KNATIVE_READY_S, self.supervisor.dead)

        def reconciled() -> bool:
            revision = self.kubectl.get_json("revisions", "-n", SMOKE_NAMESPACE, "smoke-00001")
            self.kubectl.get_json("deployments", "-n", SMOKE_NAMESPACE, "smoke-00001-deployment")
            autoscaler = self.kubectl.get_json("podautoscalers", "-n", SMOKE_NAMESPACE, "smoke-00001")
            defaulted = revision["spec"].get("timeoutSeconds") is not None
            return defaulted and bool(autoscaler.get("status", {}).get("conditions"))

        wait_until(
            "Knative's controller and autoscaler reconciling a KService",
            reconciled,
            KNATIVE_READY_S,
            self.supervisor.dead,
        )
        self.kubectl(
            "delete", "namespace", SMOKE_NAMESPACE, "--wait=true", f"--timeout={KNATIVE_READY_S:.0f}s"
        )


def installed_configmaps(share: Path) -> list[dict[str, Any]]:
    """Knative's ConfigMaps as the install writes them: the module's YAML, with the queue-proxy image
    and the registries whose tags are not resolved over the network set in config-deployment."""
    configmaps = [
        document
        for path in sorted((share / "configmaps").glob("*.yaml"))
        for document in yaml.safe_load_all(path.read_text())
        if document
    ]
    for document in configmaps:
        if document["metadata"]["name"] == "config-deployment":
            document["data"]["queue-sidecar-image"] = QUEUE_IMAGE
            document["data"]["registries-skipping-tag-resolving"] = REGISTRIES_SKIPPING_TAG_RESOLVING
    return configmaps


def reset_configmaps(kubectl: Kubectl, share: Path) -> None:
    """Replace (not apply) each of Knative's ConfigMaps with its installed form: a replace writes the
    whole object, so keys another field manager added (a stack's settings patches) are gone."""
    kubectl("replace", "-f", "-", stdin=yaml.safe_dump_all(installed_configmaps(share), sort_keys=False))
