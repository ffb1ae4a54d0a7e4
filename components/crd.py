"""Pure: the ``taskactions.flyte.org`` CustomResourceDefinition that the Flyte manager reconciles.

The manager watches TaskActions from startup and cannot work without this CRD. The definition is
written out here as data, because the product ships without Flyte's YAML. It was transcribed from
Flyte's published CRD (flyteorg/flyte ``executor/config/crd/bases/flyte.org_taskactions.yaml``,
commit 6fadb90d65, controller-gen v0.19.0, Apache-2.0), descriptions included so that
``kubectl explain taskactions`` reads as upstream's does. ``tests/test_manager.py`` compares the two
whenever ``../shared/schemas`` is present.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Final

from components.knative import Manifest

CRD_API_VERSION: Final = "apiextensions.k8s.io/v1"
CRD_KIND: Final = "CustomResourceDefinition"
GROUP: Final = "flyte.org"
VERSION: Final = "v1"
KIND: Final = "TaskAction"
LIST_KIND: Final = "TaskActionList"
PLURAL: Final = "taskactions"
SINGULAR: Final = "taskaction"
CRD_NAME: Final = f"{PLURAL}.{GROUP}"
# Upstream's annotation, kept: it records which controller-gen version produced the schema.
ANNOTATION_CONTROLLER_GEN: Final = "controller-gen.kubebuilder.io/version"
CONTROLLER_GEN_VERSION: Final = "v0.19.0"

# metav1.Condition.type: "CamelCase" or "foo.example.com/CamelCase".
CONDITION_TYPE_PATTERN: Final = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)


def build_taskaction_crd(labels: Mapping[str, str]) -> Manifest:
    """The CRD manifest, with ``labels`` on it; a fresh copy on each call, so callers may mutate it."""
    return {
        "apiVersion": CRD_API_VERSION,
        "kind": CRD_KIND,
        "metadata": {
            "name": CRD_NAME,
            "labels": dict(labels),
            "annotations": {ANNOTATION_CONTROLLER_GEN: CONTROLLER_GEN_VERSION},
        },
        "spec": {
            "group": GROUP,
            "names": {"kind": KIND, "listKind": LIST_KIND, "plural": PLURAL, "singular": SINGULAR},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": copy.deepcopy(_PRINTER_COLUMNS),
                    "schema": {"openAPIV3Schema": copy.deepcopy(_OPEN_API_V3_SCHEMA)},
                }
            ],
        },
    }


_PRINTER_COLUMNS: Final[list[Manifest]] = [
    {
        "jsonPath": ".spec.runName",
        "name": "Run",
        "type": "string",
    },
    {
        "jsonPath": ".spec.actionName",
        "name": "Action",
        "type": "string",
    },
    {
        "jsonPath": ".spec.taskType",
        "name": "TaskType",
        "type": "string",
    },
    {
        "jsonPath": ".status.conditions[?(@.type=='Progressing')].reason",
        "name": "Status",
        "type": "string",
    },
    {
        "jsonPath": ".metadata.creationTimestamp",
        "name": "Age",
        "type": "date",
    },
    {
        "jsonPath": ".status.conditions[?(@.type=='Progressing')].status",
        "name": "Progressing",
        "priority": 1,
        "type": "string",
    },
    {
        "jsonPath": ".status.conditions[?(@.type=='Succeeded')].status",
        "name": "Succeeded",
        "priority": 1,
        "type": "string",
    },
    {
        "jsonPath": ".status.conditions[?(@.type=='Failed')].status",
        "name": "Failed",
        "priority": 1,
        "type": "string",
    },
]

_OPEN_API_V3_SCHEMA: Final[Manifest] = {
    "description": "TaskAction is the Schema for the taskactions API",
    "properties": {
        "apiVersion": {
            "description": (
                "APIVersion defines the versioned schema of this representation of an object.\n"
                "Servers should convert recognized schemas to the latest internal value, and\n"
                "may reject unrecognized values.\n"
                "More info: "
                "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
            ),
            "type": "string",
        },
        "kind": {
            "description": (
                "Kind is a string value representing the REST resource this object "
                "represents.\n"
                "Servers may infer this from the endpoint the client submits requests to.\n"
                "Cannot be updated.\n"
                "In CamelCase.\n"
                "More info: "
                "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
            ),
            "type": "string",
        },
        "metadata": {
            "type": "object",
        },
        "spec": {
            "description": "spec defines the desired state of TaskAction",
            "properties": {
                "actionName": {
                    "description": "ActionName is the unique name of this action within the run",
                    "maxLength": 30,
                    "minLength": 1,
                    "type": "string",
                },
                "actionType": {
                    "description": (
                        "ActionType discriminates what kind of action this CR represents.\n"
                        'Mirrors cloud\'s explicit ActionType enum. Empty means "task" for\n'
                        "backward compatibility with existing CRs."
                    ),
                    "enum": ["task", "condition"],
                    "type": "string",
                },
                "cacheKey": {
                    "description": (
                        "CacheKey enables cache lookup/writeback for this task action when "
                        "set.\n"
                        "This is propagated from workflow.TaskAction.cache_key."
                    ),
                    "maxLength": 256,
                    "type": "string",
                },
                "conditionSpec": {
                    "description": (
                        "ConditionSpec is the proto-serialized workflow.ConditionAction, "
                        "present iff\n"
                        'actionType == "condition". Carries '
                        "type/prompt/description/timeout/webhook."
                    ),
                    "format": "byte",
                    "type": "string",
                },
                "domain": {
                    "description": "Domain this action belongs to",
                    "maxLength": 63,
                    "minLength": 1,
                    "type": "string",
                },
                "envVars": {
                    "additionalProperties": {
                        "type": "string",
                    },
                    "description": (
                        "EnvVars are run-scoped environment variables projected from RunSpec "
                        "for executor runtime use."
                    ),
                    "type": "object",
                },
                "group": {
                    "description": "Group is the group this action belongs to, if applicable.",
                    "maxLength": 256,
                    "type": "string",
                },
                "inputUri": {
                    "description": (
                        "InputURI is the path to the input data for this action.\n"
                        "Empty for conditions; the reconciler validates presence for tasks."
                    ),
                    "type": "string",
                },
                "interruptible": {
                    "description": (
                        "Interruptible is the run-scoped interruptibility override projected from RunSpec."
                    ),
                    "type": "boolean",
                },
                "parentActionName": {
                    "description": "ParentActionName is the optional name of the parent action",
                    "maxLength": 30,
                    "minLength": 1,
                    "type": "string",
                },
                "project": {
                    "description": "Project this action belongs to",
                    "maxLength": 63,
                    "minLength": 1,
                    "type": "string",
                },
                "runName": {
                    "description": "RunName is the name of the run this action belongs to",
                    "maxLength": 30,
                    "minLength": 1,
                    "type": "string",
                },
                "runOutputBase": {
                    "description": (
                        "RunOutputBase is the base path where this action should write its "
                        "output.\n"
                        "Empty for conditions; the reconciler validates presence for tasks."
                    ),
                    "type": "string",
                },
                "shortName": {
                    "description": "ShortName is the human-readable display name for this task",
                    "maxLength": 63,
                    "type": "string",
                },
                "taskTemplate": {
                    "description": (
                        "TaskTemplate is the proto-serialized core.TaskTemplate stored "
                        "inline in etcd.\n"
                        "Empty for conditions; the reconciler validates presence for tasks."
                    ),
                    "format": "byte",
                    "type": "string",
                },
                "taskType": {
                    "description": (
                        "TaskType identifies which plugin handles this task (e.g. "
                        '"container", "spark", "ray").\n'
                        "Empty for conditions; the reconciler validates presence for tasks."
                    ),
                    "maxLength": 63,
                    "type": "string",
                },
            },
            "required": ["actionName", "domain", "project", "runName"],
            "type": "object",
        },
        "status": {
            "description": "status defines the observed state of TaskAction",
            "properties": {
                "attempts": {
                    "description": (
                        "Attempts is the latest observed action attempt number, starting from 1."
                    ),
                    "format": "int32",
                    "type": "integer",
                },
                "cacheStatus": {
                    "description": (
                        "CacheStatus is the latest observed cache lookup result for this action."
                    ),
                    "format": "int32",
                    "type": "integer",
                },
                "conditions": {
                    "description": (
                        "conditions represent the current state of the TaskAction resource.\n"
                        "Each condition has a unique type and reflects the status of a "
                        "specific aspect of the resource.\n"
                        "\n"
                        "Standard condition types include:\n"
                        '- "Available": the resource is fully functional\n'
                        '- "Progressing": the resource is being created or updated\n'
                        '- "Degraded": the resource failed to reach or maintain its desired '
                        "state\n"
                        "\n"
                        "The status of each condition is one of True, False, or Unknown."
                    ),
                    "items": {
                        "description": (
                            "Condition contains details for one aspect of the current state "
                            "of this API Resource."
                        ),
                        "properties": {
                            "lastTransitionTime": {
                                "description": (
                                    "lastTransitionTime is the last time the condition "
                                    "transitioned from one status to another.\n"
                                    "This should be when the underlying condition changed.  "
                                    "If that is not known, then using the time when the API "
                                    "field changed is acceptable."
                                ),
                                "format": "date-time",
                                "type": "string",
                            },
                            "message": {
                                "description": (
                                    "message is a human readable message indicating details "
                                    "about the transition.\n"
                                    "This may be an empty string."
                                ),
                                "maxLength": 32768,
                                "type": "string",
                            },
                            "observedGeneration": {
                                "description": (
                                    "observedGeneration represents the .metadata.generation "
                                    "that the condition was set based upon.\n"
                                    "For instance, if .metadata.generation is currently 12, "
                                    "but the .status.conditions[x].observedGeneration is 9, "
                                    "the condition is out of date\n"
                                    "with respect to the current state of the instance."
                                ),
                                "format": "int64",
                                "minimum": 0,
                                "type": "integer",
                            },
                            "reason": {
                                "description": (
                                    "reason contains a programmatic identifier indicating "
                                    "the reason for the condition's last transition.\n"
                                    "Producers of specific condition types may define "
                                    "expected values and meanings for this field,\n"
                                    "and whether the values are considered a guaranteed API.\n"
                                    "The value should be a CamelCase string.\n"
                                    "This field may not be empty."
                                ),
                                "maxLength": 1024,
                                "minLength": 1,
                                "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                                "type": "string",
                            },
                            "status": {
                                "description": "status of the condition, one of True, False, Unknown.",
                                "enum": ["True", "False", "Unknown"],
                                "type": "string",
                            },
                            "type": {
                                "description": (
                                    "type of condition in CamelCase or in foo.example.com/CamelCase."
                                ),
                                "maxLength": 316,
                                "pattern": CONDITION_TYPE_PATTERN,
                                "type": "string",
                            },
                        },
                        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
                        "type": "object",
                    },
                    "type": "array",
                    "x-kubernetes-list-map-keys": ["type"],
                    "x-kubernetes-list-type": "map",
                },
                "errorState": {
                    "description": (
                        "ErrorState is the structured error from the last failed/aborted "
                        "attempt.\n"
                        "Populated when the plugin returns a core.ExecutionError; preserves "
                        "the\n"
                        "Code field that ActionEvent.ErrorInfo cannot carry."
                    ),
                    "properties": {
                        "code": {
                            "description": (
                                'Code is the plugin-defined error code (e.g. "OOMKilled",\n'
                                '"ContainerCreating", "PrimaryContainerNotFound").'
                            ),
                            "type": "string",
                        },
                        "kind": {
                            "description": 'Kind is the error kind: "USER", "SYSTEM", or "" (unspecified).',
                            "type": "string",
                        },
                        "message": {
                            "description": "Message is the human-readable error message.",
                            "type": "string",
                        },
                    },
                    "type": "object",
                },
                "phaseHistory": {
                    "description": (
                        "PhaseHistory is an append-only log of phase transitions. Unlike "
                        "conditions\n"
                        "(which are updated in-place by type), this preserves the full "
                        "timeline:\n"
                        "Queued → Initializing → Executing → Succeeded/Failed, each with a "
                        "timestamp."
                    ),
                    "items": {
                        "description": "PhaseTransition records a phase change with its timestamp.",
                        "properties": {
                            "message": {
                                "description": (
                                    "Message is an optional human-readable message about the transition."
                                ),
                                "type": "string",
                            },
                            "occurredAt": {
                                "description": "OccurredAt is when this phase transition happened.",
                                "format": "date-time",
                                "type": "string",
                            },
                            "phase": {
                                "description": (
                                    'Phase is the phase that was entered (e.g. "Queued", '
                                    '"Initializing", "Executing", "Succeeded", "Failed").'
                                ),
                                "type": "string",
                            },
                        },
                        "required": ["occurredAt", "phase"],
                        "type": "object",
                    },
                    "type": "array",
                },
                "pluginPhase": {
                    "description": (
                        "PluginPhase is a human-readable representation of the plugin's current phase."
                    ),
                    "type": "string",
                },
                "pluginPhaseVersion": {
                    "description": "PluginPhaseVersion is the version of the current plugin phase.",
                    "format": "int32",
                    "type": "integer",
                },
                "pluginState": {
                    "description": (
                        "PluginState is the Gob-encoded plugin state from the last reconciliation round."
                    ),
                    "format": "byte",
                    "type": "string",
                },
                "pluginStateVersion": {
                    "description": (
                        "PluginStateVersion tracks the version of the plugin state schema for compatibility."
                    ),
                    "type": "integer",
                },
                "signalValue": {
                    "description": (
                        "SignalValue is the proto-serialized core.Literal supplied by Signal.\n"
                        "Set exactly once; the reconciler transitions the CR to Succeeded "
                        "when present.\n"
                        "Only meaningful for condition actions."
                    ),
                    "format": "byte",
                    "type": "string",
                },
                "signalledAt": {
                    "description": "SignalledAt is when the signal was received.",
                    "format": "date-time",
                    "type": "string",
                },
                "signalledBy": {
                    "description": "SignalledBy identifies the principal that signalled the condition.",
                    "type": "string",
                },
                "stateJson": {
                    "description": (
                        "StateJSON is the JSON serialized NodeStatus that was last sent to the State Service"
                    ),
                    "type": "string",
                },
                "systemFailures": {
                    "description": (
                        "SystemFailures counts system-level failures observed during "
                        "reconciliation —\n"
                        "either Go errors returned from Plugin.Handle (e.g. transient k8s "
                        "API errors,\n"
                        "admission webhook denials) or plugin transitions reporting a "
                        "system-retryable\n"
                        "failure (e.g. resource deleted externally). When it exceeds the "
                        "configured\n"
                        "maximum, the TaskAction is converted to a permanent failure."
                    ),
                    "format": "int32",
                    "type": "integer",
                },
            },
            "type": "object",
        },
    },
    "required": ["spec"],
    "type": "object",
}
