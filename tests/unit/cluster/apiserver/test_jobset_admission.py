"""JobSet's admission decisions in the embedded API server (JobSet spec 1.2, 1.5, 1.6; golden
case G14): the webhook defaults, the create rules with upstream's messages, update
immutability, and no exception for any JSON (the defaults run before the schema check)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trainop.cluster.apiserver.admission import jobset_create, jobsets


def rj(name: str, replicas: int = 1, depends: str = "", **job: Any) -> dict[str, Any]:
    pod = {"spec": {"containers": [{"name": "c", "image": "i"}]}}
    found = {"name": name, "replicas": replicas, "template": {"spec": {"template": pod, **job}}}
    if depends:
        found["dependsOn"] = [{"name": depends, "status": "Ready"}]
    return found


def js(name: str = "test-jobset", *rjs: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"replicatedJobs": list(rjs), **spec}}


def messages(obj: dict[str, Any]) -> list[str]:
    return [
        body.removeprefix("Internal error: ") for _, _, body in jobset_create.create_causes(obj)
    ]


def test_g14_defaults() -> None:
    rules = [
        {"action": "FailJobSet"},
        {"name": "mine", "action": "FailJobSet"},
        {"action": "RestartJobSet"},
    ]
    obj = js("x", rj("a"), failurePolicy={"rules": rules}, volumeClaimPolicies=[{"templates": []}])
    jobsets.default(obj)
    spec = obj["spec"]
    assert spec["network"] == {"enableDNSHostnames": True, "publishNotReadyAddresses": True}
    assert spec["successPolicy"] == {"operator": "All"}
    assert spec["startupPolicy"] == {"startupPolicyOrder": "AnyOrder"}
    job = spec["replicatedJobs"][0]["template"]["spec"]
    assert (job["completionMode"], job["template"]["spec"]["restartPolicy"]) == (
        "Indexed",
        "OnFailure",
    )
    assert [r["name"] for r in spec["failurePolicy"]["rules"]] == [
        "failurePolicyRule0",
        "mine",
        "failurePolicyRule2",
    ]
    assert spec["volumeClaimPolicies"][0]["retentionPolicy"] == {"whenDeleted": "Delete"}


def test_defaults_keep_what_is_set() -> None:
    obj = js("x", rj("a", completionMode="NonIndexed"), network={"enableDNSHostnames": False})
    obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["restartPolicy"] = (
        "Never"
    )
    jobsets.default(obj)
    job = obj["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert (job["completionMode"], job["template"]["spec"]["restartPolicy"]) == (
        "NonIndexed",
        "Never",
    )
    assert obj["spec"]["network"] == {"enableDNSHostnames": False, "publishNotReadyAddresses": True}


def test_g14_name_lengths_and_product() -> None:
    assert messages(js("a" * 62, rj("rj", 101))) == [
        "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
    ]
    indexed = rj("rj", 1, completionMode="Indexed", completions=1)
    assert messages(js("a" * 56, indexed)) == [
        "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
    ]
    big = rj("test-jobset-replicated-job-0", 2147483647, parallelism=2147483647)
    assert messages(js("t", big))[0] == (
        "the product of replicas and parallelism must not exceed 2147483647 for replicatedJob "
        "'test-jobset-replicated-job-0'"
    )


def test_failure_policy_rules() -> None:
    rules = [
        {"name": "", "action": "FailJobSet", "targetReplicatedJobs": ["x"]},
        {"name": "9bad", "action": "FailJobSet", "onJobFailureReasons": ["Evicted"]},
        {"name": "same", "action": "FailJobSet"},
        {"name": "same", "action": "RestartJobSet"},
    ]
    assert messages(js("t", rj("a"), failurePolicy={"rules": rules})) == [
        "invalid failure policy rule name of length 0, the rule name must be at least 1 characters "
        "long and at most 128 characters long",
        "invalid failure policy rule name '', a failure policy rule name must start with an "
        "alphabetic character, optionally followed by a string of alphanumeric characters or "
        "'_,:', and must end with an alphanumeric character or '_'",
        "invalid replicatedJob name 'x' in failure policy does not appear in .spec.ReplicatedJobs",
        "invalid failure policy rule name '9bad', a failure policy rule name must start with an "
        "alphabetic character, optionally followed by a string of alphanumeric characters or "
        "'_,:', and must end with an alphanumeric character or '_'",
        "invalid job failure reason 'Evicted' in failure policy is not a recognized job failure "
        "reason",
        "rule names are not unique, rules with indices [2 3] all have the same name 'same'",
    ]


def test_coordinator_rules_in_order() -> None:
    indexed = rj("rj", 2, completionMode="Indexed", completions=3)
    assert messages(js("t", indexed, coordinator={"replicatedJob": "nope"})) == [
        "coordinator replicatedJob nope does not exist"
    ]
    assert messages(js("t", indexed, coordinator={"replicatedJob": "rj", "jobIndex": 2})) == [
        "coordinator job index 2 is invalid for replicatedJob rj"
    ]
    assert messages(js("t", rj("rj"), coordinator={"replicatedJob": "rj"})) == [
        "job for coordinator pod must be indexed completion mode, and completions number must be "
        "set"
    ]
    assert messages(
        js("t", indexed, coordinator={"replicatedJob": "rj", "jobIndex": 1, "podIndex": 3})
    ) == ["coordinator pod index 3 is invalid for replicatedJob rj job index 1"]
    long_sub = js(
        "t", indexed, coordinator={"replicatedJob": "rj"}, network={"subdomain": "s" * 60}
    )
    found = messages(long_sub)
    assert found[-1].startswith('spec will lead to invalid label value "t-rj-0-0.' + "s" * 60)
    assert (
        messages(
            js("t", indexed, coordinator={"replicatedJob": "rj", "jobIndex": 1, "podIndex": 2})
        )
        == []
    )


def test_depends_on_and_subdomain_rules() -> None:
    later = js("t", rj("a"), rj("b", depends="c"), rj("c"))
    assert messages(later) == ["replicatedJob: b cannot depend on replicatedJob: c"]
    own = js("t", rj("a"), rj("b", depends="b"))
    assert messages(own) == []  # upstream's QUIRK: a replicatedJob may depend on itself
    found = messages(js("t", rj("a"), network={"subdomain": "Bad_Sub"}))
    assert len(found) == 2
    assert "RFC 1123 subdomain" in found[0]
    assert "DNS-1035 label" in found[1]


def test_update_immutability() -> None:
    old = js("t", rj("a"), suspend=False)
    new = copy.deepcopy(old)
    new["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["nodeSelector"] = {
        "z": "b"
    }
    assert [c[0] for c in jobsets.update_causes(new["spec"], old["spec"])] == [
        "spec.replicatedJobs"
    ]
    new["spec"]["suspend"] = True  # becoming suspended: scheduling fields may change
    assert jobsets.update_causes(new["spec"], old["spec"]) == []
    new["spec"]["replicatedJobs"][0]["replicas"] = 2
    assert [c[0] for c in jobsets.update_causes(new["spec"], old["spec"])] == [
        "spec.replicatedJobs"
    ]
    managed = js("t", rj("a"), managedBy="kueue.x-k8s.io/multikueue")
    assert [c[0] for c in jobsets.update_causes(managed["spec"], old["spec"])] == ["spec.managedBy"]


def test_cel_rules() -> None:
    exclusive = js(
        "t", rj("a"), rj("b", depends="a"), startupPolicy={"startupPolicyOrder": "InOrder"}
    )
    assert [body for _, _, body in jobsets.cel_causes(exclusive["spec"], None)] == [
        'Invalid value: "object": StartupPolicy and DependsOn APIs are mutually exclusive'
    ]
    old = js("t", rj("a"), successPolicy={"operator": "All"})["spec"]
    new = js("t", rj("a"), successPolicy={"operator": "Any"})["spec"]
    assert jobsets.cel_causes(new, old) == [
        ("spec.successPolicy", "FieldValueInvalid", 'Invalid value: "object": Value is immutable')
    ]


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from(["", "a", "Indexed", "InOrder"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "spec",
                    "replicatedJobs",
                    "name",
                    "template",
                    "dependsOn",
                    "network",
                    "failurePolicy",
                    "rules",
                    "coordinator",
                    "replicas",
                    "completions",
                    "completionMode",
                    "targetReplicatedJobs",
                    "onJobFailureReasons",
                    "successPolicy",
                    "startupPolicy",
                    "startupPolicyOrder",
                    "suspend",
                    "subdomain",
                    "managedBy",
                    "volumeClaimPolicies",
                    "parallelism",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=600, deadline=None)
@given(obj=JSON, old=JSON)
def test_any_json_gives_causes_never_an_exception(obj: Any, old: Any) -> None:
    body = {"metadata": {"name": "t"}, "spec": obj}
    jobsets.default(body)
    jobset_create.create_causes(body)
    jobsets.cel_causes(body["spec"], old)
    jobsets.update_causes(body["spec"], old)
