"""The operator's RBAC, as data: every permission it holds and why, once.

``RULES`` is the single source of ``manifests/base/cluster-role.yaml`` (cluster-wide rules) and
``manifests/base/role.yaml`` (rules in the operator's own namespace); ``trainop manifests
generate`` writes both, and a unit test runs the real reconciler over every kind and checks that
each (verb, resource) it sends is granted here, and that each ``RECONCILE`` rule is exercised;
it does the same for the leader elector and the certificate publishing, per namespace and name.

The grant is the least the operator needs, not upstream's (spec 12.1). Each rule carries the
``Need`` that justifies it:
- ``RECONCILE``: calls the reconciler, its informers and its event recorder make;
- ``OWNER_REFERENCES``: children carry ``blockOwnerDeletion: true``, which the
  OwnerReferencesPermissionEnforcement admission plugin allows only to a client that may update
  the owner's ``finalizers``;
- ``MPI_ESCALATION``: the MPI launcher Role grants ``pods`` get/list/watch and ``pods/exec``
  create; RBAC lets the operator create that Role only if it holds those permissions itself;
- ``LEADER_ELECTION``: a Lease in the operator namespace (upstream quirk 14, fixed);
- ``WEBHOOK_CERTS``: the self-signed serving certificate kept in a Secret in the operator
  namespace and its CA injected into the webhook configurations (the v1 validator; Trainer v2's
  defaulter and validator, ``controller.webhook_configurations``).

``get``/``update`` on one object are restricted with ``resourceNames`` to the flag defaults
the Deployment passes explicitly; ``create`` cannot be restricted by name in Kubernetes RBAC.
Pure data: no I/O, no clock. Neighbours: ``trainop.cli.manifests`` (renders the YAML).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from trainop.api.kinds import KINDS
from trainop.api.trainer import constants as trainer
from trainop.controller.webhook_configurations import TRAINER_DEFAULTER, TRAINER_VALIDATOR

NAME = "training-operator"
LEADER_ELECTION_ID = "1ca428e5.training-operator.kubeflow.org"
WEBHOOK_SECRET_NAME = "training-operator-webhook-cert"
WEBHOOK_CONFIGURATION_NAME = "validator.training-operator.kubeflow.org"


class Need(Enum):
    """Why a rule is granted (see the module docstring)."""

    RECONCILE = "reconcile"
    OWNER_REFERENCES = "owner references"
    MPI_ESCALATION = "MPI launcher Role"
    LEADER_ELECTION = "leader election"
    WEBHOOK_CERTS = "webhook certificates"


class Scope(Enum):
    """Where a rule applies: every namespace (ClusterRole) or the operator's own (Role)."""

    CLUSTER = "cluster"
    OPERATOR_NAMESPACE = "operator namespace"


@dataclass(frozen=True, slots=True)
class Rule:
    """One RBAC policy rule and its justification."""

    group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    need: Need
    why: str
    scope: Scope = Scope.CLUSTER
    resource_names: tuple[str, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        """The rule as a ``rbac.authorization.k8s.io/v1`` PolicyRule."""
        wire: dict[str, Any] = {
            "apiGroups": [self.group],
            "resources": list(self.resources),
            "verbs": list(self.verbs),
        }
        if self.resource_names:
            wire["resourceNames"] = list(self.resource_names)
        return wire


_JOBS = tuple(info.plural for info in KINDS)
_TRAINER = trainer.GROUP
_RUNTIMES = (trainer.PLURALS[trainer.TRAINING_RUNTIME],
             trainer.PLURALS[trainer.CLUSTER_TRAINING_RUNTIME])  # fmt: skip
_TRAINJOBS = trainer.PLURALS[trainer.TRAINJOB]
_PODGROUPS = ("scheduling.volcano.sh", "scheduling.x-k8s.io")
_CHILDREN = ("create", "list", "patch", "watch")

RULES: tuple[Rule, ...] = (
    Rule("kubeflow.org", _JOBS, ("delete", "list", "watch"), Need.RECONCILE,
         "job informers; TTL deletes finished jobs"),
    Rule("kubeflow.org", tuple(f"{p}/status" for p in _JOBS), ("update",), Need.RECONCILE,
         "status written with PUT on the status subresource"),
    Rule("kubeflow.org", tuple(f"{p}/finalizers" for p in _JOBS), ("update",),
         Need.OWNER_REFERENCES, "children are created with blockOwnerDeletion"),
    Rule(_TRAINER, (_TRAINJOBS,), ("list", "watch"), Need.RECONCILE,
         "TrainJob informer (--enable-scheme trainjob)"),
    Rule(_TRAINER, (f"{_TRAINJOBS}/status",), ("patch",), Need.RECONCILE,
         "TrainJob status: a merge patch of the status subresource"),
    Rule(_TRAINER, (f"{_TRAINJOBS}/finalizers",), ("update",), Need.OWNER_REFERENCES,
         "JobSets, PodGroups and ConfigMaps/Secrets are applied with blockOwnerDeletion"),
    Rule(_TRAINER, _RUNTIMES, ("get", "list", "watch", "patch"), Need.RECONCILE,
         "runtime informers (a cache miss is read once more; the TrainJob webhook reads the "
         "live runtime), the legacy finalizer removed"),
    Rule("jobset.x-k8s.io", ("jobsets",), ("create", "delete", "get", "list", "patch", "watch"),
         Need.RECONCILE, "a TrainJob's JobSet: server-side applied (a create when absent), "
         "deleted at the active deadline, read live by the TrainJob webhook on updates"),
    Rule("", ("pods", "services"), ("create", "delete", "list", "watch"), Need.RECONCILE,
         "replica pods and headless Services; deleted on restart, scale-down and cleanup"),
    Rule("", ("events",), ("create",), Need.RECONCILE, "Events recorded on jobs"),
    Rule("", ("configmaps",), _CHILDREN, Need.RECONCILE,
         "MPI and DGL generated files (hostfile) ConfigMap, updated as workers come and go; "
         "a TrainJob's runtime snapshot and MPI hostfile (server-side apply)"),
    Rule("", ("services",), ("patch",), Need.RECONCILE,
         "MPIJob v2beta1: the headless Service's selector reconciled"),
    Rule("", ("secrets",), ("create", "list", "patch", "watch"), Need.RECONCILE,
         "MPIJob v2beta1: the job's SSH key Secret (informer on the app label), rekeyed when "
         "its keys are wrong; a TrainJob's MPI SSH Secret (server-side apply)"),
    Rule("batch", ("jobs",), ("create", "list", "patch", "watch"), Need.RECONCILE,
         "MPIJob v2beta1: the launcher Job (informer on the app label: its status drives the "
         "job's), suspended and resumed with the job"),
    Rule("", ("serviceaccounts",), ("create", "list", "watch"), Need.RECONCILE,
         "MPI and DGL launcher (and DGL partitioner) ServiceAccount (never changed once created)"),
    Rule("rbac.authorization.k8s.io", ("roles", "rolebindings"), _CHILDREN, Need.RECONCILE,
         "MPI and DGL exec Roles (target pod names) and RoleBindings"),
    Rule("autoscaling", ("horizontalpodautoscalers",), ("delete", *_CHILDREN), Need.RECONCILE,
         "elastic PyTorchJob HPA; deleted on suspend"),
    *(
        Rule(group, ("podgroups",), ("delete", *_CHILDREN), Need.RECONCILE,
             "gang-scheduling PodGroup; deleted when the job finishes or is suspended")
        for group in _PODGROUPS
    ),
    Rule("", ("pods",), ("get",), Need.MPI_ESCALATION,
         "the launcher Role grants get/list/watch on pods"),
    Rule("", ("pods/exec",), ("create",), Need.MPI_ESCALATION,
         "the launcher Role grants exec into the job's worker pods"),
    Rule("admissionregistration.k8s.io", ("validatingwebhookconfigurations",), ("get", "update"),
         Need.WEBHOOK_CERTS, "CA bundle injection (v1 kinds; Trainer v2 validators)",
         resource_names=(WEBHOOK_CONFIGURATION_NAME, TRAINER_VALIDATOR)),
    Rule("admissionregistration.k8s.io", ("mutatingwebhookconfigurations",), ("get", "update"),
         Need.WEBHOOK_CERTS, "CA bundle injection (Trainer v2 TrainJob defaulter)",
         resource_names=(TRAINER_DEFAULTER,)),
    Rule("coordination.k8s.io", ("leases",), ("create",), Need.LEADER_ELECTION,
         "the first candidate creates the Lease", scope=Scope.OPERATOR_NAMESPACE),
    Rule("coordination.k8s.io", ("leases",), ("get", "update"), Need.LEADER_ELECTION,
         "acquire and renew", scope=Scope.OPERATOR_NAMESPACE,
         resource_names=(LEADER_ELECTION_ID,)),
    Rule("", ("secrets",), ("create",), Need.WEBHOOK_CERTS,
         "create the certificate Secret when it is missing", scope=Scope.OPERATOR_NAMESPACE),
    Rule("", ("secrets",), ("get", "update"), Need.WEBHOOK_CERTS,
         "read and rotate the serving certificate", scope=Scope.OPERATOR_NAMESPACE,
         resource_names=(WEBHOOK_SECRET_NAME,)),
)  # fmt: skip


def policy_rules(scope: Scope) -> list[dict[str, Any]]:
    """The PolicyRules of one scope, in table order."""
    return [rule.to_wire() for rule in RULES if rule.scope is scope]


def rbac_objects(scope: Scope) -> list[dict[str, Any]]:
    """The role of one scope and its binding to the operator's ServiceAccount.

    ``CLUSTER``: ClusterRole + ClusterRoleBinding; ``OPERATOR_NAMESPACE``: Role + RoleBinding.
    Namespaced objects carry no namespace: the kustomize overlay sets it, and with it the
    ServiceAccount subject's namespace.
    """
    rbac = "rbac.authorization.k8s.io"
    kind = "ClusterRole" if scope is Scope.CLUSTER else "Role"
    role = {
        "apiVersion": f"{rbac}/v1",
        "kind": kind,
        "metadata": {"name": NAME, "labels": {"app": NAME}},
        "rules": policy_rules(scope),
    }
    binding = {
        "apiVersion": f"{rbac}/v1",
        "kind": f"{kind}Binding",
        "metadata": {"name": NAME, "labels": {"app": NAME}},
        "roleRef": {"apiGroup": rbac, "kind": kind, "name": NAME},
        "subjects": [{"kind": "ServiceAccount", "name": NAME}],
    }
    return [role, binding]
