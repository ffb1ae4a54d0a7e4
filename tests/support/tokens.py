"""Pulumi type tokens of the pulumi-kubernetes resources the program registers, written out literally
(the app and namespace tokens are the product's, in ``flyte_apps.core.constants``)."""

from __future__ import annotations

from typing import Final

TYPE_PROVIDER: Final = "pulumi:providers:kubernetes"
TYPE_SERVICE_ACCOUNT: Final = "kubernetes:core/v1:ServiceAccount"
TYPE_CONFIG_MAP: Final = "kubernetes:core/v1:ConfigMap"
TYPE_CONFIG_MAP_PATCH: Final = "kubernetes:core/v1:ConfigMapPatch"
TYPE_PVC: Final = "kubernetes:core/v1:PersistentVolumeClaim"
TYPE_SERVICE: Final = "kubernetes:core/v1:Service"
TYPE_DEPLOYMENT: Final = "kubernetes:apps/v1:Deployment"
TYPE_CLUSTER_ROLE: Final = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
TYPE_CLUSTER_ROLE_BINDING: Final = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
TYPE_ROLE: Final = "kubernetes:rbac.authorization.k8s.io/v1:Role"
TYPE_CRD: Final = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"

TYPES_BY_KIND: Final = {
    "ServiceAccount": TYPE_SERVICE_ACCOUNT,
    "ClusterRole": TYPE_CLUSTER_ROLE,
    "ClusterRoleBinding": TYPE_CLUSTER_ROLE_BINDING,
    "CustomResourceDefinition": TYPE_CRD,
    "ConfigMap": TYPE_CONFIG_MAP,
    "PersistentVolumeClaim": TYPE_PVC,
    "Deployment": TYPE_DEPLOYMENT,
    "Service": TYPE_SERVICE,
}
"""The typed resource each kind of manager object is registered as."""
