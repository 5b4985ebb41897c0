"""Child Job construction (JobSet spec 2.3, 2.14; golden cases G1, G2 and the worked example)."""

from __future__ import annotations

from tests.unit.cluster.controllers.jobset_fixtures import jobset, replicated
from trainop.cluster.controllers.jobset import children

P = "jobset.sigs.k8s.io/"


def _names(jobs: list[dict]) -> list[str]:  # type: ignore[type-arg]
    return [j["metadata"]["name"] for j in jobs]


def test_g1_all_jobs_created_with_the_label_set() -> None:
    js = jobset("test-jobset", replicated("replicated-job", 2))
    jobs = children.missing_jobs(js, 0, ())
    assert _names(jobs) == ["test-jobset-replicated-job-0", "test-jobset-replicated-job-1"]
    keys = ["027791c2c0a79daacbc05ab1512c28988581229f", "9cb00a8d9c038e5b48cf2bbb8ef93e14919303c0"]
    for index, job in enumerate(jobs):
        expected = {
            P + "jobset-name": "test-jobset",
            P + "jobset-uid": "js-uid",
            P + "replicatedjob-name": "replicated-job",
            P + "restart-attempt": "0",
            P + "replicatedjob-replicas": "2",
            P + "global-replicas": "2",
            P + "job-index": str(index),
            P + "job-global-index": str(index),
            P + "job-group-index": str(index),
            P + "group-name": "default",
            P + "group-replicas": "2",
            P + "job-key": keys[index],
        }
        pod_meta = job["spec"]["template"]["metadata"]
        for where in (
            job["metadata"]["labels"],
            job["metadata"]["annotations"],
            pod_meta["labels"],
            pod_meta["annotations"],
        ):
            assert where == expected
        assert P + "job-restart-attempt" not in job["metadata"]["labels"]
        assert job["spec"]["suspend"] is False
        assert job["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "jobset.x-k8s.io/v1alpha2",
                "kind": "JobSet",
                "name": "test-jobset",
                "uid": "js-uid",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]


def test_g1_existing_names_are_skipped_and_global_indexes_count_earlier_jobs() -> None:
    js = jobset("test-jobset", replicated("replicated-job-A", 1), replicated("replicated-job-B", 2))
    taken = {"test-jobset-replicated-job-B-0"}
    made = children.missing_jobs(js, 0, taken) + children.missing_jobs(js, 1, taken)
    assert _names(made) == ["test-jobset-replicated-job-A-0", "test-jobset-replicated-job-B-1"]
    assert [j["metadata"]["labels"][P + "job-global-index"] for j in made] == ["0", "2"]
    assert made[1]["metadata"]["labels"][P + "global-replicas"] == "3"


def test_g2_subdomain_coordinator_and_suspend() -> None:
    coordinator = {"replicatedJob": "replicated-job", "jobIndex": 0, "podIndex": 0}
    js = jobset(
        "test-jobset", replicated("replicated-job", 1), coordinator=coordinator, suspend=True
    )
    job = children.missing_jobs(js, 0, ())[0]
    endpoint = "test-jobset-replicated-job-0-0.test-jobset"
    assert job["spec"]["template"]["spec"]["subdomain"] == "test-jobset"
    assert job["metadata"]["labels"][P + "coordinator"] == endpoint
    assert job["spec"]["template"]["metadata"]["annotations"][P + "coordinator"] == endpoint
    assert job["spec"]["suspend"] is True


def test_no_subdomain_without_dns_hostnames_and_template_metadata_kept() -> None:
    rj = replicated("node", 1)
    rj["template"]["metadata"] = {"labels": {"team": "a", P + "job-index": "x"}}
    js = jobset("myjob", rj, network={"enableDNSHostnames": False})
    job = children.missing_jobs(js, 0, ())[0]
    assert "subdomain" not in job["spec"]["template"]["spec"]
    assert job["metadata"]["labels"]["team"] == "a"
    assert job["metadata"]["labels"][P + "job-index"] == "0"  # JobSet's values win


def test_worked_example_job_key_and_groups() -> None:
    js = jobset("myjob", replicated("node", 1), replicated("init", 2, groupName="prep"))
    node = children.missing_jobs(js, 0, ())[0]
    init = children.missing_jobs(js, 1, ())[1]
    assert node["metadata"]["labels"][P + "job-key"] == "3d775a6ec03a7ef3d3a742ece6e38701a114d3e2"
    assert init["metadata"]["labels"][P + "group-replicas"] == "2"
    assert init["metadata"]["labels"][P + "job-group-index"] == "1"
    assert init["metadata"]["labels"][P + "job-global-index"] == "2"
