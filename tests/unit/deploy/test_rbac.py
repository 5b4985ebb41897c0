"""The shipped RBAC grants what the operator does, derived from running it, and nothing more.

Every (apiGroup, resource, verb) the reconciler sends over the scenarios of ``operator_calls``
must be granted cluster-wide; every granted permission must be either sent, implied by what the
operator creates (finalizers for blocking owner references, the MPI launcher Role's rules), or
one of the documented needs of code outside the reconciler (leader election, webhook
certificates), which are confined to the operator's namespace or to one named object.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.deploy.operator_calls import Request, Usage, run_all
from trainop.api.kinds import KINDS, kind_info
from trainop.controller import rbac
from trainop.controller.rbac import RULES, Need, Rule, Scope

ROOT = Path(__file__).resolve().parents[3]
BASE = ROOT / "manifests/base"


@pytest.fixture(scope="module")
def usage() -> Usage:
    return run_all()


def triples(rules: list[Rule]) -> set[Request]:
    return {(rule.group, res, verb) for rule in rules for res in rule.resources
            for verb in rule.verbs}  # fmt: skip


def granted(need: Need | None = None, scope: Scope = Scope.CLUSTER) -> set[Request]:
    """What the table grants in ``scope`` on every object of a resource (no resourceNames)."""
    rules = [rule for rule in RULES if rule.scope is scope and not rule.resource_names]
    return triples([rule for rule in rules if need is None or rule.need is need])


def finalizer_needs(usage: Usage) -> set[Request]:
    """``<jobs>/finalizers`` update for every job kind that owns a child with blockOwnerDeletion."""
    return {
        ("kubeflow.org", f"{kind_info(ref['kind']).plural}/finalizers", "update")
        for _, body in usage.created
        for ref in body["metadata"].get("ownerReferences") or []
        if ref.get("blockOwnerDeletion") and ref.get("apiVersion") == "kubeflow.org/v1"
    }


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
    assert len(finalizer_needs(usage)) == len(KINDS), "every kind owns children"


def test_the_operator_holds_every_rule_it_grants_to_mpi_launchers(usage: Usage) -> None:
    # RBAC refuses to create a Role granting what its creator does not hold (no `escalate`).
    held = granted()
    wanted = launcher_needs(usage)
    assert wanted, "the MPI scenario should have created the launcher Role"
    assert wanted <= held, sorted(wanted - held)
    assert granted(Need.MPI_ESCALATION) <= wanted - usage.requests, "escalation rules only"


def test_nothing_is_granted_beyond_what_is_derived_or_documented(usage: Usage) -> None:
    derived = usage.requests | finalizer_needs(usage)
    escalation = launcher_needs(usage)
    documented = {Need.LEADER_ELECTION, Need.WEBHOOK_CERTS}
    for rule in RULES:
        if rule.need in documented:
            continue
        extra = triples([rule]) - derived - escalation
        assert not extra, f"{rule.why}: {sorted(extra)} is neither used nor needed"


def test_leader_election_and_certificate_rules_are_confined() -> None:
    for rule in RULES:
        if rule.need is Need.LEADER_ELECTION:
            assert rule.scope is Scope.OPERATOR_NAMESPACE
            assert rule.resources == ("leases",)
            assert rule.verbs == ("create",) or rule.resource_names == (rbac.LEADER_ELECTION_ID,)
        if rule.need is Need.WEBHOOK_CERTS and rule.resources == ("secrets",):
            assert rule.scope is Scope.OPERATOR_NAMESPACE
            assert rule.verbs == ("create",) or rule.resource_names == (rbac.WEBHOOK_SECRET_NAME,)
    webhook = [r for r in RULES if r.resources == ("validatingwebhookconfigurations",)]
    assert [r.resource_names for r in webhook] == [(rbac.WEBHOOK_CONFIGURATION_NAME,)]
    group, plural = "admissionregistration.k8s.io", "validatingwebhookconfigurations"
    assert triples(webhook) == {(group, plural, verb) for verb in ("get", "update")}
    wanted = {("coordination.k8s.io", "leases", v) for v in ("create", "get", "update")}
    assert triples([r for r in RULES if r.need is Need.LEADER_ELECTION]) == wanted


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
