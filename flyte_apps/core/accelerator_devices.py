"""Flyte's accelerator device names: its Kubernetes plugin's default ``accelerator-devices`` map (Flyte
v2.0.43, ``flytek8s/config/config.go``), which turns the SDK's device names (``A100 80G``) into the node
label values GPU nodes are provisioned with (``nvidia-a100-80gb``), and a check of a device against it;
and its default ``accelerator-device-classes`` (the resource name and node labels of each class).

The plugin looks a device up upper-cased (``GetNormalizedAcceleratorDevice``) and falls back to the device
as written. Two of its default keys are not upper case (``L40s``, ``L4_VWS``), so upstream never
normalizes them; here the lookup ignores case, so ``L40s`` and ``l40s`` become ``nvidia-l40s`` as the map
means. Anything else is upstream's behaviour.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

DEFAULT_ACCELERATOR_DEVICES: Final[Mapping[str, str]] = MappingProxyType(
    {
        # NVIDIA GPUs
        "A10": "nvidia-a10",
        "A10G": "nvidia-a10g",
        "A100": "nvidia-tesla-a100",
        "A100 80G": "nvidia-a100-80gb",
        "A100G": "nvidia-a100g",
        "B200": "nvidia-b200",
        "GB200": "nvidia-gb200",
        "H100": "nvidia-h100",
        "H100 80G": "nvidia-h100-80gb",
        "H100 MEGA 80G": "nvidia-h100-mega-80gb",
        "H200": "nvidia-h200",
        "K80": "nvidia-tesla-k80",
        "L4": "nvidia-l4",
        "L40s": "nvidia-l40s",
        "L4_VWS": "nvidia-l4-vws",
        "M60": "nvidia-tesla-m60",
        "P4": "nvidia-tesla-p4",
        "P100": "nvidia-tesla-p100",
        "RTX PRO 6000": "nvidia-rtx-pro-6000",
        "T4": "nvidia-tesla-t4",
        "V100": "nvidia-tesla-v100",
        # Google Cloud TPUs
        "V5E": "tpu-v5-lite-podslice",
        "V5P": "tpu-v5p-slice",
        "V6E": "tpu-v6e-slice",
        # AWS Neuron
        "INF1": "aws-neuron-inf1",
        "INF2": "aws-neuron-inf2",
        "TRN1": "aws-neuron-trn1",
        "TRN1N": "aws-neuron-trn1n",
        "TRN2": "aws-neuron-trn2",
        "TRN2U": "aws-neuron-trn2u",
        # AMD GPUs
        "MI100": "amd-mi100",
        "MI210": "amd-mi210",
        "MI250": "amd-mi250",
        "MI250X": "amd-mi250x",
        "MI300A": "amd-mi300a",
        "MI300X": "amd-mi300x",
        "MI325X": "amd-mi325x",
        "MI350X": "amd-mi350x",
        "MI355X": "amd-mi355x",
        # Habana Gaudi (Intel)
        "GAUDI1": "habana-gaudi-dl1",
    }
)
DEFAULT_DEVICE_CLASSES: Final[Mapping[str, Mapping[str, str]]] = MappingProxyType(
    {
        # The plugin's default ``accelerator-device-classes`` (same file), camelCase as the stack config
        # writes them; a field left out falls back to the platform's ``gpu*`` setting.
        "NVIDIA_GPU": MappingProxyType({"resourceName": "nvidia.com/gpu"}),
        "GOOGLE_TPU": MappingProxyType(
            {
                "resourceName": "google.com/tpu",
                "deviceNodeLabel": "cloud.google.com/gke-tpu-accelerator",
                "partitionSizeNodeLabel": "cloud.google.com/gke-tpu-topology",
            }
        ),
        "AMAZON_NEURON": MappingProxyType({"resourceName": "aws.amazon.com/neuron"}),
        "AMD_GPU": MappingProxyType({"resourceName": "amd.com/gpu"}),
        "HABANA_GAUDI": MappingProxyType({"resourceName": "habana.ai/gaudi"}),
    }
)
NEAREST: Final = 3
NEAREST_CUTOFF: Final = 0.6


def normalized_device(device: str) -> str:
    """The node label value for ``device``: the map's value for an SDK name (any case), else the device."""
    by_upper = {name.upper(): label for name, label in DEFAULT_ACCELERATOR_DEVICES.items()}
    return by_upper.get(device.upper(), device)


def is_known_device(device: str) -> bool:
    """An SDK name of the map (any case) or one of its node label values."""
    return normalized_device(device) in DEFAULT_ACCELERATOR_DEVICES.values()


def nearest_devices(device: str) -> list[str]:
    """The known devices closest to ``device``: ``nvidia-a100-80gb (A100 80G)``, nearest first."""
    sdk_names = {label: name for name, label in DEFAULT_ACCELERATOR_DEVICES.items()}
    candidates = {label.lower(): label for label in sdk_names} | {
        name.lower(): DEFAULT_ACCELERATOR_DEVICES[name] for name in DEFAULT_ACCELERATOR_DEVICES
    }
    found: list[str] = []
    for match in difflib.get_close_matches(device.lower(), candidates, n=NEAREST * 2, cutoff=NEAREST_CUTOFF):
        label = candidates[match]
        shown = f"{label} ({sdk_names[label]})"
        if shown not in found:
            found.append(shown)
    return found[:NEAREST]
