"""The local provisioner's decisions (``controllers.volumes.binding``), and JobSet's claims."""

from __future__ import annotations

from typing import Any

import pytest

from trainop.cluster.controllers.volumes import binding, jobsetclaims

Obj = dict[str, Any]
DIRECTORY = "/state/volumes/pvc-u1"


def claim(name: str = "data", *, uid: str = "u1", **spec: Any) -> Obj:
    body = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    body |= {"storageClassName": "standard", **spec}
    meta = {"name": name, "namespace": "ns", "uid": uid}
    return {"metadata": meta, "spec": body, "status": {"phase": "Pending"}}


def volume(name: str, *, phase: str = "Available", size: str = "1Gi", **spec: Any) -> Obj:
    body = {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
            "storageClassName": "standard", "hostPath": {"path": f"/v/{name}"}, **spec}  # fmt: skip
    return {"metadata": {"name": name}, "spec": body, "status": {"phase": phase}}


CLASSES = {"standard": binding.default_class()}


def test_the_default_class_is_this_provisioners_default_immediate_delete() -> None:
    made = binding.default_class()
    annotations = made["metadata"]["annotations"]
    assert annotations == {"storageclass.kubernetes.io/is-default-class": "true"}
    assert (made["provisioner"], made["reclaimPolicy"], made["volumeBindingMode"]) == (
        "trainop.dev/local-path",
        "Delete",
        "Immediate",
    )


def test_an_unbound_claim_of_this_class_gets_a_new_volume_named_after_its_uid() -> None:
    step = binding.claim_step(claim(), {}, CLASSES, directory=DIRECTORY)
    assert step.create is not None
    assert step.bind == "pvc-u1"
    made = step.create
    assert made["metadata"]["name"] == "pvc-u1"
    assert made["metadata"]["annotations"] == {
        "pv.kubernetes.io/provisioned-by": "trainop.dev/local-path"
    }
    assert made["spec"]["hostPath"] == {"path": DIRECTORY, "type": "Directory"}
    assert made["spec"]["capacity"] == {"storage": "1Gi"}
    assert made["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
    assert made["spec"]["claimRef"] == {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                        "namespace": "ns", "name": "data", "uid": "u1"}  # fmt: skip
    assert step.status == {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                           "capacity": {"storage": "1Gi"}}  # fmt: skip
    assert step.event == (
        "Normal",
        "ProvisioningSucceeded",
        "Successfully provisioned volume pvc-u1",
    )


def test_the_class_reclaim_policy_goes_to_the_volume() -> None:
    keep = {**binding.default_class(), "metadata": {"name": "keep"}, "reclaimPolicy": "Retain"}
    step = binding.claim_step(
        claim(storageClassName="keep"), {}, {"keep": keep}, directory=DIRECTORY
    )
    assert step.create is not None
    assert step.create["spec"]["persistentVolumeReclaimPolicy"] == "Retain"


@pytest.mark.parametrize(
    ("classes", "class_name"),
    [({}, "standard"), ({"other": {"provisioner": "example.com/nfs"}}, "other"), (CLASSES, "")],
)
def test_a_claim_of_no_class_ours_stays_pending(classes: dict[str, Obj], class_name: str) -> None:
    step = binding.claim_step(claim(storageClassName=class_name), {}, classes, directory=DIRECTORY)
    assert (step.create, step.bind, step.status) == (None, "", None)


def test_a_claim_without_any_class_is_given_the_newest_default_first() -> None:
    classless = claim()
    del classless["spec"]["storageClassName"]

    def made(name: str, stamp: str) -> Obj:
        meta = {**binding.default_class()["metadata"], "name": name, "creationTimestamp": stamp}
        return {**binding.default_class(), "metadata": meta}

    classes = {"older": made("older", "2020-01-01T00:00:00Z"),
               "standard": made("standard", "2021-01-01T00:00:00Z")}  # fmt: skip
    step = binding.claim_step(classless, {}, classes, directory=DIRECTORY)
    assert (step.assign_class, step.create, step.bind) == ("standard", None, "")
    assert binding.claim_step(classless, {}, {}, directory=DIRECTORY).assign_class == ""
    none_wanted = claim(storageClassName="")  # "": volumes made by hand only
    assert binding.claim_step(none_wanted, {}, CLASSES, directory=DIRECTORY).assign_class == ""


def test_a_block_claim_gets_no_directory_but_a_warning() -> None:
    step = binding.claim_step(claim(volumeMode="Block"), {}, CLASSES, directory=DIRECTORY)
    assert (step.create, step.bind, step.status) == (None, "", None)
    assert step.event is not None
    assert step.event[:2] == ("Warning", "ProvisioningFailed")


def test_an_available_volume_that_fits_is_preferred_smallest_first() -> None:
    volumes = {
        "small": volume("small", size="512Mi"),  # too small
        "big": volume("big", size="10Gi"),
        "right": volume("right", size="2Gi"),
        "rwx": volume("rwx", accessModes=["ReadWriteMany"]),  # wrong modes
        "taken": volume("taken", phase="Bound", claimRef={"namespace": "ns", "name": "x"}),
        "other-class": volume("other-class", storageClassName="fast"),
    }
    step = binding.claim_step(claim(), volumes, CLASSES, directory=DIRECTORY)
    assert (step.create, step.bind) == (None, "right")
    assert step.status == {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                           "capacity": {"storage": "2Gi"}}  # fmt: skip


def test_a_volume_pre_bound_to_the_claim_wins() -> None:
    ref = {"namespace": "ns", "name": "data"}
    volumes = {"any": volume("any"), "mine": volume("mine", size="5Gi", claimRef=ref)}
    assert binding.claim_step(claim(), volumes, CLASSES, directory=DIRECTORY).bind == "mine"


def test_a_claim_bound_both_ways_only_has_its_status_brought_up_to_date() -> None:
    ref = binding.claim_ref(claim())
    volumes = {"pvc-u1": volume("pvc-u1", phase="Bound", claimRef=ref)}
    pending = claim(volumeName="pvc-u1")
    step = binding.claim_step(pending, volumes, CLASSES, directory=DIRECTORY)
    assert (step.create, step.bind) == (None, "")
    assert step.status is not None
    assert step.status["phase"] == "Bound"
    done = {**pending, "status": step.status}
    assert binding.claim_step(done, volumes, CLASSES, directory=DIRECTORY).status is None


def test_a_claim_whose_volume_is_gone_is_lost() -> None:
    step = binding.claim_step(claim(volumeName="nowhere"), {}, CLASSES, directory=DIRECTORY)
    assert step.status == {"phase": "Lost"}


def test_a_claim_naming_another_claims_volume_stays_pending() -> None:
    other = {"namespace": "ns", "name": "other", "uid": "u2"}
    volumes = {"v": volume("v", phase="Bound", claimRef=other)}
    step = binding.claim_step(claim(volumeName="v"), volumes, CLASSES, directory=DIRECTORY)
    assert (step.create, step.bind, step.status) == (None, "", None)


def test_volume_phases() -> None:
    live = claim()
    claims = {("ns", "data"): live}
    ref = binding.claim_ref(live)
    assert binding.volume_step(volume("v", phase="Pending"), claims).status == {
        "phase": "Available"
    }
    assert binding.volume_step(volume("v"), claims).status is None
    bound = volume("v", claimRef=ref)
    assert binding.volume_step(bound, claims).status == {"phase": "Bound"}


@pytest.mark.parametrize("policy", ["Retain", "Recycle"])
def test_a_volume_whose_claim_is_gone_is_released_unless_delete(policy: str) -> None:
    ref = binding.claim_ref(claim())
    kept = volume("v", phase="Bound", claimRef=ref, persistentVolumeReclaimPolicy=policy)
    step = binding.volume_step(kept, {})
    assert (step.delete, step.status) == (False, {"phase": "Released"})
    released = {**kept, "status": {"phase": "Released"}}
    assert binding.volume_step(released, {}).status is None


def test_a_delete_volume_whose_claim_is_gone_or_replaced_is_deleted() -> None:
    ref = binding.claim_ref(claim())
    doomed = volume("v", phase="Bound", claimRef=ref, persistentVolumeReclaimPolicy="Delete")
    assert binding.volume_step(doomed, {}).delete
    replaced = {("ns", "data"): claim(uid="u-new")}  # same name, another object
    assert binding.volume_step(doomed, replaced).delete


def test_claims_in_use_are_those_of_pods_not_finished() -> None:
    def pod(phase: str, claim_name: str) -> Obj:
        volumes = [{"name": "d", "persistentVolumeClaim": {"claimName": claim_name}},
                   {"name": "e", "emptyDir": {}}]  # fmt: skip
        return {"metadata": {"namespace": "ns"}, "spec": {"volumes": volumes},
                "status": {"phase": phase}}  # fmt: skip

    pods = [pod("Running", "a"), pod("Pending", "b"), pod("Succeeded", "c"), pod("Failed", "d")]
    assert binding.claims_in_use(pods) == {("ns", "a"), ("ns", "b")}


JOBSET = {
    "metadata": {"name": "tune", "namespace": "team", "uid": "js-uid"},
    "spec": {
        "volumeClaimPolicies": [
            {"templates": [{"metadata": {"name": "initializer", "labels": {"a": "b"}},
                            "spec": {"accessModes": ["ReadWriteOnce"],
                                     "resources": {"requests": {"storage": "20Gi"}}}}]},
            {"templates": [{"metadata": {"name": "cache"}, "spec": {}}],
             "retentionPolicy": {"whenDeleted": "Retain"}},
        ]
    },
}  # fmt: skip


def test_jobset_claims_are_named_labelled_and_owned_as_jobset_does() -> None:
    made = jobsetclaims.claims(JOBSET)
    assert [c["metadata"]["name"] for c in made] == ["initializer-tune", "cache-tune"]
    first, second = made
    assert first["metadata"]["namespace"] == "team"
    assert first["metadata"]["labels"] == {"a": "b", "jobset.sigs.k8s.io/jobset-name": "tune"}
    assert first["spec"]["resources"] == {"requests": {"storage": "20Gi"}}
    owner = first["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("JobSet", "tune", "js-uid")
    assert "ownerReferences" not in second["metadata"]  # Retain: outlives the JobSet


def test_jobs_mounting_a_template_name_get_its_claim_volume() -> None:
    mounts = [{"name": "initializer", "mountPath": "/workspace"}]
    spec: Obj = {"containers": [{"name": "node", "volumeMounts": mounts}]}
    jobsetclaims.add_claim_volumes(JOBSET, spec)
    assert spec["volumes"] == [
        {"name": "initializer", "persistentVolumeClaim": {"claimName": "initializer-tune"}}
    ]
    untouched: Obj = {"containers": [{"name": "node"}]}
    jobsetclaims.add_claim_volumes(JOBSET, untouched)
    assert "volumes" not in untouched
    own = {"name": "initializer", "emptyDir": {}}
    given: Obj = {"initContainers": [{"name": "i", "volumeMounts": mounts}], "volumes": [own]}
    jobsetclaims.add_claim_volumes(JOBSET, given)
    assert given["volumes"] == [own]  # the template's own volume of that name stays
