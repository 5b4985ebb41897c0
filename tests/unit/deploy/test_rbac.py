"""The shipped RBAC grants what the operator does, derived from running it, and nothing more.

The reconcilers of every kubeflow.org/v1 kind and of Trainer v2's TrainJob (with its runtime
controllers, ``trainjob_calls``) are run.

Every (apiGroup, resource, verb) the reconciler sends over the scenarios of ``operator_calls``
must be granted cluster-wide; every granted permission must be either sent, implied by what the
operator creates (finalizers for blocking owner references, the MPI launcher Role's rules), or
sent by the process outside the reconciler: leader election and webhook certificates, run with
the names the shipped Deployment passes, whose every call must be granted by a rule of the
table as Kubernetes RBAC matches it (scope, namespace, resourceNames) and whose rules must
each be used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.deploy.operator_calls import (
    OPERATOR_NAMESPACE,
    Call,
    ProcessNames,
    Request,
    Usage,
    run_all,
    run_process,
)
from trainop.api.kinds import KINDS, kind_info
from trainop.api.trainer import constants as c
from trainop.controller import rbac
from trainop.controller.rbac import RULES, Need, Rule, Scope

ROOT = Path(__file__).resolve().parents[3]
BASE = ROOT / "manifests/base"


@pytest.fixture(scope="module")
def usage() -> Usage:
    return run_all()


def deployment_names() -> ProcessNames:
    """The Lease, Secret and Service names from the shipped Deployment's operator args."""
    deployment = yaml.safe_load((BASE / "deployment.yaml").read_text())
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    flags = dict(arg.removeprefix("--").partition("=")[::2] for arg in container["args"])
    return ProcessNames(
        lease=flags["leader-election-id"],
        secret=flags["webhook-secret-name"],
        service=flags["webhook-service-name"],
    )


@pytest.fixture(scope="module")
def process_usage() -> Usage:
    return run_process(deployment_names())


def allows(rule: Rule, call: Call) -> bool:
    """Whether ``rule`` (in its Role or ClusterRole) authorises ``call``, as RBAC decides."""
    if (call.group, call.resource, call.verb) not in triples([rule]):
        return False
    if rule.scope is Scope.OPERATOR_NAMESPACE and call.namespace != OPERATOR_NAMESPACE:
        return False
    # resourceNames never match create, list or watch: those requests carry no name.
    return not rule.resource_names or (call.name != "" and call.name in rule.resource_names)


def triples(rules: list[Rule]) -> set[Request]:
    return {(rule.group, res, verb) for rule in rules for res in rule.resources
            for verb in rule.verbs}  # fmt: skip


def granted(need: Need | None = None, scope: Scope = Scope.CLUSTER) -> set[Request]:
    """What the table grants in ``scope`` on every object of a resource (no resourceNames)."""
    rules = [rule for rule in RULES if rule.scope is scope and not rule.resource_names]
    return triples([rule for rule in rules if need is None or rule.need is need])


def finalizer_needs(usage: Usage) -> set[Request]:
    """``<jobs>/finalizers`` update for every job kind that owns a child with blockOwnerDeletion."""
    refs = [
        ref
        for _, body in usage.created
        for ref in body["metadata"].get("ownerReferences") or []
        if ref.get("blockOwnerDeletion")
    ]
    v1 = {
        ("kubeflow.org", f"{kind_info(ref['kind']).plural}/finalizers", "update")
        for ref in refs
        if ref.get("apiVersion") == "kubeflow.org/v1"
    }
    trainer = {
        (c.GROUP, f"{c.PLURALS[ref['kind']]}/finalizers", "update")
        for ref in refs
        if ref.get("apiVersion") == c.API_VERSION
    }
    return v1 | trainer


def launcher_needs(usage: Usage) -> set[Request]:
    """Every permission in the Roles the operator created (the MPI launcher's)."""
    rules: list[dict[str, Any]] = [
        rule for _, body in usage.created if body["kind"] == "Role" for rule in body["rules"]
    ]
    return {
        (group, res, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for res in rule["resources"]
        for verb in rule["verbs"]
    }


def test_every_request_the_operator_sends_is_granted_cluster_wide(usage: Usage) -> None:
    missing = usage.requests - granted()
    assert not missing, f"add to trainop.controller.rbac.RULES: {sorted(missing)}"


def test_every_reconcile_grant_is_used_by_the_operator(usage: Usage) -> None:
    unused = granted(Need.RECONCILE) - usage.requests
    assert not unused, f"granted but never sent: {sorted(unused)}"
    named = [rule for rule in RULES if rule.need is Need.RECONCILE and rule.resource_names]
    assert named == [], "reconcile rules cover objects of any name"


def test_finalizer_grants_match_the_blocking_owner_references(usage: Usage) -> None:
    assert finalizer_needs(usage) == granted(Need.OWNER_REFERENCES)
    assert len(finalizer_needs(usage)) == len(KINDS) + 1, "every kind owns children, TrainJob too"


def test_the_operator_holds_every_rule_it_grants_to_mpi_launchers(usage: Usage) -> None:
    # RBAC refuses to create a Role granting what its creator does not hold (no `escalate`).
    held = granted()
    wanted = launcher_needs(usage)
    assert wanted, "the MPI scenario should have created the launcher Role"
    assert wanted <= held, sorted(wanted - held)
    assert granted(Need.MPI_ESCALATION) <= wanted - usage.requests, "escalation rules only"


def test_nothing_is_granted_beyond_what_is_derived(usage: Usage, process_usage: Usage) -> None:
    derived = usage.requests | finalizer_needs(usage) | process_usage.requests
    escalation = launcher_needs(usage)
    for rule in RULES:
        extra = triples([rule]) - derived - escalation
        assert not extra, f"{rule.why}: {sorted(extra)} is neither used nor needed"


def test_leader_election_and_certificate_calls_are_granted(process_usage: Usage) -> None:
    kinds = {(c.resource, c.verb) for c in process_usage.calls}
    assert kinds == {
        (resource, verb)
        for resource in ("leases", "secrets")
        for verb in ("create", "get", "update")
    } | {(f"{way}webhookconfigurations", v) for way in ("validating", "mutating")
         for v in ("get", "update")}, "all paths ran"  # fmt: skip
    refused = [c for c in process_usage.calls if not any(allows(rule, c) for rule in RULES)]
    assert not refused, f"fix trainop.controller.rbac.RULES: {refused}"
    configurations = {(c.resource, c.name) for c in process_usage.calls if "webhook" in c.resource}
    assert configurations == {
        ("validatingwebhookconfigurations", "validator.training-operator.kubeflow.org"),
        ("validatingwebhookconfigurations", "validator.trainer.kubeflow.org"),
        ("mutatingwebhookconfigurations", "defaulter.trainer.kubeflow.org"),
    }, "the CA goes into v1's configuration and Trainer v2's two (spec 6.1 names)"


def test_every_leader_election_and_certificate_rule_is_used(process_usage: Usage) -> None:
    for rule in RULES:
        if rule.need not in (Need.LEADER_ELECTION, Need.WEBHOOK_CERTS):
            continue
        for resource, verb in ((res, v) for res in rule.resources for v in rule.verbs):
            used = [c for c in process_usage.calls if c.resource == resource and c.verb == verb]
            assert any(allows(rule, c) for c in used), f"{rule.why}: {verb} {resource} unused"


@pytest.mark.parametrize(
    ("path", "role_kind", "scope"),
    [("cluster-role.yaml", "ClusterRole", Scope.CLUSTER),
     ("role.yaml", "Role", Scope.OPERATOR_NAMESPACE)],
)  # fmt: skip
def test_the_shipped_role_is_the_table(path: str, role_kind: str, scope: Scope) -> None:
    documents = list(yaml.safe_load_all((BASE / path).read_text()))
    [role] = [d for d in documents if d["kind"] == role_kind]
    [binding] = [d for d in documents if d["kind"] == f"{role_kind}Binding"]
    assert role["rules"] == rbac.policy_rules(scope)
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                                  "name": role["metadata"]["name"]}  # fmt: skip
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "training-operator"}]
