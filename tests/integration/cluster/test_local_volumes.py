"""Local volumes end to end: the embedded API server, the local provisioner, a process kubelet
(and the local scheduler), over real HTTP; ``kubectl get pvc,pv`` with the real binary.

A claim is bound to a directory of the provisioner's root; pods in sequence share data
through it; a read-only mount never changes the claim; deleting a claim waits for the pods
that use it, then honours the reclaim policy; names cannot leave the root; a pod whose claim
is missing or unbound is not scheduled, with kube-scheduler's message.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import polling
from tests.integration.cluster.apiserver.conftest import RunningServer
from tests.integration.cluster.kubelet.harness import Local, local, pod, py, start_server
from tests.integration.cluster.kubelet.test_runtime_seam import NoPull
from trainop import errors
from trainop.cluster.controllers.volumes import LocalProvisioner
from trainop.cluster.controllers.volumes.jobsetclaimer import JOBSETS
from trainop.cluster.controllers.volumes.provisioner import CLAIMS, CLASSES, VOLUMES
from trainop.cluster.kubelet import DEFAULT_NODE, LogFiles
from trainop.cluster.kubelet.runtimes import options
from trainop.cluster.kubelet.runtimes.runtime import (
    Launch,
    Report,
    Running,
    StartError,
    Target,
    no_report,
)
from trainop.cluster.scheduler.scheduler import (
    LocalScheduler,
    machine_allocatable,
    podgroup_crds,
)
from trainop.kube.client import Obj
from trainop.kube.clock import LoopClock
from trainop.kube.http import HttpClient
from trainop.kube.resources import CRDS, PODS
from trainop.local.session import ClusterConfig, machine_cluster

DEADLINE = 30.0


@dataclass
class Site:
    server: RunningServer
    logs: LogFiles
    root: Path  # the pods' sandboxes
    volumes: Path  # the provisioner's root


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("sandboxes")
    volumes = tmp_path_factory.mktemp("state") / "volumes"
    logs = LogFiles(root)
    for server in start_server(tmp_path_factory.mktemp("apiserver"), logs):
        yield Site(server, logs, root, volumes)


@contextlib.asynccontextmanager
async def cluster(site: Site, *, scheduler: bool = False) -> AsyncIterator[Local]:
    """A kubelet on a fresh namespace, the provisioner (and the scheduler), all stopped after."""
    client = HttpClient.from_kubeconfig(path=str(site.server.kubeconfig))
    tasks = [
        asyncio.create_task(
            LocalProvisioner(client=client, clock=LoopClock(), root=site.volumes).run()
        )
    ]
    if scheduler:  # it watches PodGroups too: their CRDs must be served
        for crd in podgroup_crds():
            with contextlib.suppress(errors.AlreadyExistsError):
                await client.create(CRDS, crd)
        allocatable = machine_allocatable(cpus=4, memory=8 << 30)
        placer = LocalScheduler(client=client, allocatable=allocatable, node_name=DEFAULT_NODE)
        tasks.append(asyncio.create_task(placer.run()))
    try:
        async with local(site.server, site.logs, site.root, require_binding=scheduler) as env:
            yield env
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await client.close()


def claim(name: str, *, modes: tuple[str, ...] = ("ReadWriteOnce",), **spec: Any) -> Obj:
    body = {"accessModes": list(modes), "resources": {"requests": {"storage": "1Gi"}}, **spec}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": body}  # fmt: skip


def using(name: str, claim_name: str, code: str, *, read_only: bool = False) -> Obj:
    """A pod that mounts ``claim_name`` at /data and runs ``code`` (``DATA`` is its path)."""
    prologue = "import os\nDATA = os.environ['TRAINOP_ROOT'] + '/data'\n"
    mount = {"name": "data", "mountPath": "/data"}
    source: dict[str, Any] = {"claimName": claim_name}
    if read_only:
        source["readOnly"] = True
    return pod(
        name,
        py(prologue + code, volumeMounts=[mount]),
        volumes=[{"name": "data", "persistentVolumeClaim": source}],
    )


async def get(env: Local, resource: Any, name: str) -> Obj:
    namespace = env.namespace if resource.namespaced else None
    return await env.client.get(resource, name=name, namespace=namespace)


async def until(env: Local, resource: Any, name: str, predicate: Any, what: str) -> Obj:
    async def probe() -> Obj | polling.NotYet:
        try:
            found = await get(env, resource, name)
        except errors.NotFoundError:
            return polling.NotYet("not found")
        return found if predicate(found) else polling.NotYet(found.get("status"))

    result: Obj = await polling.until(probe, timeout=DEADLINE, what=what, interval=0.05)
    return result


async def gone(env: Local, resource: Any, name: str) -> None:
    async def probe() -> bool | polling.NotYet:
        try:
            found = await get(env, resource, name)
        except errors.NotFoundError:
            return True
        return polling.NotYet(found.get("status"))

    await polling.until(probe, timeout=DEADLINE, what=f"{name} deleted", interval=0.05)


async def bound(env: Local, name: str) -> Obj:
    return await until(
        env, CLAIMS, name, lambda c: (c.get("status") or {}).get("phase") == "Bound", "bound"
    )


def exit_code(found: Obj) -> int:
    state = found["status"]["containerStatuses"][0]["state"]
    return int(state["terminated"]["exitCode"])


def test_a_claim_is_bound_and_pods_in_sequence_share_its_data(site: Site) -> None:
    async def body() -> None:
        async with cluster(site) as env:
            await env.create(claim("shared"), CLAIMS)
            found = await bound(env, "shared")
            assert found["spec"]["storageClassName"] == "standard"  # the default class
            assert found["status"]["capacity"] == {"storage": "1Gi"}
            assert found["status"]["accessModes"] == ["ReadWriteOnce"]
            assert found["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
            assert "kubernetes.io/pvc-protection" in found["metadata"]["finalizers"]
            volume = await get(env, VOLUMES, found["spec"]["volumeName"])
            assert volume["metadata"]["name"] == f"pvc-{found['metadata']['uid']}"
            assert volume["spec"]["claimRef"]["uid"] == found["metadata"]["uid"]
            assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Delete"
            assert volume["status"]["phase"] == "Bound"
            directory = Path(volume["spec"]["hostPath"]["path"])
            assert directory.parent == site.volumes
            assert directory.is_dir()
            assert directory.stat().st_mode & 0o777 == 0o700

            write = "open(DATA + '/note.txt', 'w').write('from the first pod')"
            await env.create(using("writer", "shared", write))
            assert exit_code(await env.phase("writer", "Succeeded", "Failed")) == 0
            check = "import sys\nsys.exit(open(DATA + '/note.txt').read() != 'from the first pod')"
            await env.create(using("reader", "shared", check))
            assert exit_code(await env.phase("reader", "Succeeded", "Failed")) == 0
            assert (directory / "note.txt").read_text() == "from the first pod"

    asyncio.run(body())


def test_a_read_only_mount_never_changes_the_claim(site: Site) -> None:
    async def body() -> None:
        async with cluster(site) as env:
            await env.create(claim("locked", modes=("ReadOnlyMany", "ReadWriteOnce")), CLAIMS)
            found = await bound(env, "locked")
            directory = Path((await get(env, VOLUMES, found["spec"]["volumeName"]))["spec"]
                             ["hostPath"]["path"])  # fmt: skip
            (directory / "given.txt").write_text("seed")
            code = (
                "import sys\n"
                "assert open(DATA + '/given.txt').read() == 'seed'\n"
                "try:\n"
                "    open(DATA + '/given.txt', 'w').write('changed')\n"
                "    open(DATA + '/new.txt', 'w').write('new')\n"
                "except PermissionError:\n"
                "    sys.exit(3)\n"
            )
            await env.create(using("viewer", "locked", code, read_only=True))
            done = await env.phase("viewer", "Succeeded", "Failed")
            # Not root: the write is refused. Root ignores permissions, so its write lands in
            # the pod's own copy; either way the claim is unchanged.
            assert exit_code(done) == (0 if os.geteuid() == 0 else 3)
            assert (directory / "given.txt").read_text() == "seed"
            assert not (directory / "new.txt").exists()

    asyncio.run(body())


def test_deleting_a_claim_waits_for_its_pod_then_deletes_volume_and_directory(
    site: Site,
) -> None:
    async def body() -> None:
        async with cluster(site) as env:
            await env.create(claim("doomed"), CLAIMS)
            found = await bound(env, "doomed")
            name = found["spec"]["volumeName"]
            directory = Path((await get(env, VOLUMES, name))["spec"]["hostPath"]["path"])
            await env.create(using("holder", "doomed", "import time\ntime.sleep(60)"))
            await env.phase("holder", "Running")
            await env.client.delete(CLAIMS, name="doomed", namespace=env.namespace)
            held = await get(env, CLAIMS, "doomed")  # the protection finalizer holds it
            assert held["metadata"].get("deletionTimestamp")
            assert directory.is_dir()
            await env.client.delete(PODS, name="holder", namespace=env.namespace)
            await env.gone("holder")
            await gone(env, CLAIMS, "doomed")
            await gone(env, VOLUMES, name)
            assert not directory.exists()

    asyncio.run(body())


def test_retain_keeps_the_volume_released_and_its_directory(site: Site) -> None:
    async def body() -> None:
        async with cluster(site) as env:
            keep = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                    "metadata": {"name": "keep"}, "provisioner": "trainop.dev/local-path",
                    "reclaimPolicy": "Retain"}  # fmt: skip
            with contextlib.suppress(errors.AlreadyExistsError):
                await env.client.create(CLASSES, keep)
            await env.create(claim("kept", storageClassName="keep"), CLAIMS)
            found = await bound(env, "kept")
            name = found["spec"]["volumeName"]
            volume = await get(env, VOLUMES, name)
            assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
            directory = Path(volume["spec"]["hostPath"]["path"])
            (directory / "result").write_text("42")
            await env.client.delete(CLAIMS, name="kept", namespace=env.namespace)
            await gone(env, CLAIMS, "kept")
            released = await until(
                env, VOLUMES, name, lambda v: v["status"].get("phase") == "Released", "released"
            )
            assert released["spec"]["claimRef"]["name"] == "kept"
            assert (directory / "result").read_text() == "42"
            await env.client.delete(VOLUMES, name=name)

    asyncio.run(body())


def test_names_cannot_leave_the_root(site: Site, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep me")

    async def body() -> None:
        async with cluster(site) as env:
            for bad in ("../escape", "a/b", "..", "x..y"):
                with pytest.raises(errors.ApiError) as refused:
                    await env.create(claim(bad), CLAIMS)
                assert refused.value.status in (400, 404, 405, 422)
            # A volume made by hand names any hostPath (as a hostPath volume may); reclaiming
            # it with Delete removes the volume, never a directory this provisioner did not make.
            name = f"by-hand-{env.namespace}"
            manual = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
                      "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                               "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "",
                               "hostPath": {"path": str(outside)}}}  # fmt: skip
            await env.client.create(VOLUMES, manual)
            await env.create(claim("static", storageClassName=""), CLAIMS)
            found = await bound(env, "static")
            assert found["spec"]["volumeName"] == name
            await env.client.delete(CLAIMS, name="static", namespace=env.namespace)
            await gone(env, VOLUMES, name)
            assert (outside / "precious").read_text() == "keep me"
            assert not list(site.volumes.glob("*..*"))

    asyncio.run(body())


def test_a_pod_waits_for_its_claim_with_the_schedulers_message(site: Site) -> None:
    def scheduled(p: Obj) -> str:
        conditions = (p.get("status") or {}).get("conditions") or []
        found = [c for c in conditions if c.get("type") == "PodScheduled"]
        return str(found[0].get("message") or found[0]["status"]) if found else ""

    async def body() -> None:
        async with cluster(site, scheduler=True) as env:
            await env.create(using("patient", "later", "print('ran')"))
            waiting = await env.wait("patient", lambda p: "not found" in scheduled(p))
            assert scheduled(waiting) == (
                '0/1 nodes are available: persistentvolumeclaim "later" not found.'
            )
            assert not waiting["spec"].get("nodeName")
            await env.create(claim("later"), CLAIMS)
            done = await env.phase("patient", "Succeeded")
            assert done["spec"]["nodeName"] == DEFAULT_NODE

    asyncio.run(body())


def test_kubectl_get_pvc_pv_shows_them(site: Site, tmp_path: Path) -> None:
    binary = os.environ.get("TRAINOP_KUBECTL") or shutil.which("kubectl")
    if not binary:
        if os.environ.get("TRAINOP_REQUIRE_KUBECTL"):
            pytest.fail("kubectl is not installed; TRAINOP_REQUIRE_KUBECTL is set")
        pytest.skip("kubectl is not installed (make kubectl-env installs it)")

    async def body() -> tuple[str, str, str, str]:
        async with cluster(site) as env:
            await env.create(claim("listed", modes=("ReadWriteOnce", "ReadWriteMany")), CLAIMS)
            found = await bound(env, "listed")
            environ = {
                "KUBECONFIG": str(site.server.kubeconfig),
                "KUBECACHEDIR": str(tmp_path / "cache"),
                "PATH": os.environ["PATH"],
            }
            outputs = []
            for what in ("pvc,pv", "storageclass"):
                done = await asyncio.to_thread(
                    subprocess.run,
                    [binary, "get", what, "-n", env.namespace],
                    env=environ, capture_output=True, text=True, timeout=60, check=False,
                )  # fmt: skip
                assert done.returncode == 0, done.stderr
                outputs.append(done.stdout)
            return outputs[0], outputs[1], str(found["spec"]["volumeName"]), env.namespace

    out, classes, volume, namespace = asyncio.run(body())
    shown = [line.split() for line in classes.splitlines()]
    assert shown[0] == ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE",
                        "ALLOWVOLUMEEXPANSION", "AGE"]  # fmt: skip
    standard = next(r for r in shown if r[0] == "standard")
    assert standard[1:6] == ["(default)", "trainop.dev/local-path", "Delete", "Immediate", "false"]
    lines = [line.split() for line in out.splitlines() if line.strip()]
    pvc_header = "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE"
    assert " ".join(lines[0]) == pvc_header
    row = next(r for r in lines if r[0] == "persistentvolumeclaim/listed")
    assert row[1:7] == ["Bound", volume, "1Gi", "RWO,RWX", "standard", "<unset>"]
    pv_header = (
        "NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS "
        "VOLUMEATTRIBUTESCLASS REASON AGE"
    )
    assert pv_header in [" ".join(line) for line in lines]
    pv_row = next(r for r in lines if r[0] == f"persistentvolume/{volume}")
    claimed = f"{namespace}/listed"
    assert pv_row[1:8] == ["1Gi", "RWO,RWX", "Delete", "Bound", claimed, "standard", "<unset>"]


def test_the_local_session_serves_the_default_class_and_binds_claims_in_its_state(
    tmp_path: Path,
) -> None:
    """``machine_cluster`` (``trainop run``/``local up``) starts the provisioner: the claim's
    directory is below the session's state directory, which an ephemeral session removes."""
    state = tmp_path / "state"

    async def body() -> None:
        async with machine_cluster(ClusterConfig(state_dir=state), working_dir=tmp_path) as it:
            client = it.client
            default = await client.get(CLASSES, name="standard")
            assert default["provisioner"] == "trainop.dev/local-path"
            await client.create(CLAIMS, claim("in-session"), namespace="default")

            async def is_bound() -> Obj | polling.NotYet:
                found = await client.get(CLAIMS, name="in-session", namespace="default")
                phase = (found.get("status") or {}).get("phase")
                return found if phase == "Bound" else polling.NotYet(phase)

            found = await polling.until(is_bound, timeout=DEADLINE, what="claim bound")
            volume = await client.get(VOLUMES, name=found["spec"]["volumeName"])
            directory = Path(volume["spec"]["hostPath"]["path"])
            assert directory.parent == state / "volumes"
            assert directory.is_dir()

    asyncio.run(body())


def _step(name: str, code: str, **extra: Any) -> Obj:
    prologue = "import os, sys\nWORK = os.environ['TRAINOP_ROOT'] + '/workspace'\n"
    container = py(prologue + code, name=name)
    container["volumeMounts"] = [{"name": "initializer", "mountPath": "/workspace"}]
    pod_spec = {"restartPolicy": "Never", "containers": [container]}
    return {"name": name, "template": {"spec": {"template": {"spec": pod_spec}}}, **extra}


def test_a_jobsets_claim_carries_data_from_one_step_to_the_next(tmp_path: Path) -> None:
    """The torchtune runtimes' shape: ``volumeClaimPolicies`` makes ``initializer-<jobset>``,
    the initializer step writes into it, the trainer step (``dependsOn`` Complete) reads it."""
    template = {"metadata": {"name": "initializer"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
    write = "open(WORK + '/dataset', 'w').write('rows')"
    read = "sys.exit(open(WORK + '/dataset').read() != 'rows')"
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "steps"},
        "spec": {
            "volumeClaimPolicies": [{"templates": [template]}],
            "replicatedJobs": [
                _step("dataset-initializer", write),
                _step(
                    "node", read, dependsOn=[{"name": "dataset-initializer", "status": "Complete"}]
                ),
            ],
        },
    }
    state = tmp_path / "state"

    async def body() -> None:
        async with machine_cluster(ClusterConfig(state_dir=state), working_dir=tmp_path) as it:
            client = it.client
            await client.create(JOBSETS, jobset, namespace="default")

            async def finished() -> Obj | polling.NotYet:
                found = await client.get(JOBSETS, name="steps", namespace="default")
                conditions = (found.get("status") or {}).get("conditions") or []
                done = [c["type"] for c in conditions if c.get("status") == "True"]
                ended = {"Completed", "Failed"} & set(done)
                return found if ended else polling.NotYet(found.get("status"))

            found = await polling.until(finished, timeout=60, what="the JobSet finished")
            conditions = found["status"]["conditions"]
            assert any(c["type"] == "Completed" and c["status"] == "True" for c in conditions)
            claim_obj = await client.get(CLAIMS, name="initializer-steps", namespace="default")
            assert claim_obj["status"]["phase"] == "Bound"
            owner = claim_obj["metadata"]["ownerReferences"][0]
            assert (owner["kind"], owner["name"]) == ("JobSet", "steps")
            volume = await client.get(VOLUMES, name=claim_obj["spec"]["volumeName"])
            directory = Path(volume["spec"]["hostPath"]["path"])
            assert (directory / "dataset").read_text() == "rows"

    asyncio.run(body())


class Recording(NoPull):
    """A container runtime that records each start's ``Launch`` (and starts nothing)."""

    def __init__(self) -> None:
        super().__init__()
        self.launches: dict[str, Launch] = {}

    async def start(
        self, target: Target, launch: Launch, env: Mapping[str, str], report: Report = no_report
    ) -> Running:
        self.launches[target.pod] = launch
        raise StartError("StartError", "RunContainerError", "recorded")


def test_the_container_runtime_gets_the_claim_read_only_and_the_downward_api(site: Site) -> None:
    """What a container runtime is handed (the seam both runtimes share): the claim's
    directory as the volume, ``ro`` on a read-only claim's mount, label and annotation
    fieldRefs resolved in the pod's own env."""
    runtime = Recording()

    async def body() -> None:
        client = HttpClient.from_kubeconfig(path=str(site.server.kubeconfig))
        provisioner = LocalProvisioner(client=client, clock=LoopClock(), root=site.volumes)
        task = asyncio.create_task(provisioner.run())
        try:
            async with local(site.server, site.logs, site.root, container_runtime=runtime) as env:
                await env.create(claim("seen"), CLAIMS)
                found = await bound(env, "seen")
                manifest = using("boxed", "seen", "pass", read_only=True)
                manifest["metadata"] |= {"labels": {"app": "a1"}, "annotations": {"note": "n1"}}
                fields = {"APP": "metadata.labels['app']", "NOTE": "metadata.annotations['note']"}
                manifest["spec"]["containers"][0]["env"] = [
                    {"name": k, "valueFrom": {"fieldRef": {"fieldPath": v}}}
                    for k, v in fields.items()
                ]
                await env.create(manifest)
                await env.phase("boxed", "Failed")
                volume = await get(env, VOLUMES, found["spec"]["volumeName"])
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await client.close()
        launch = runtime.launches["boxed"]
        assert launch.volumes["data"] == Path(volume["spec"]["hostPath"]["path"])
        assert launch.spec["volumeMounts"] == [
            {"name": "data", "mountPath": "/data", "readOnly": True}
        ]
        assert options.mounts(launch) == [
            f"type=bind,source={launch.volumes['data']},destination=/data,ro=true"
        ]
        assert {k: launch.pod_env[k] for k in ("APP", "NOTE")} == {"APP": "a1", "NOTE": "n1"}

    asyncio.run(body())


def test_two_claims_never_share_one_volume_made_by_hand(site: Site, tmp_path: Path) -> None:
    async def body() -> None:
        async with cluster(site) as env:
            name = f"only-{env.namespace}"
            spec = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "", "hostPath": {"path": str(tmp_path)}}  # fmt: skip
            manual = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}}
            await env.client.create(VOLUMES, {**manual, "spec": spec})
            await until(env, VOLUMES, name, lambda v: v["status"]["phase"] == "Available", "free")
            await asyncio.gather(
                *(env.create(claim(n, storageClassName=""), CLAIMS) for n in ("one", "two"))
            )
            taken = await until(env, VOLUMES, name, lambda v: v["status"]["phase"] == "Bound", "b")
            winner = taken["spec"]["claimRef"]["name"]
            loser = "two" if winner == "one" else "one"
            await bound(env, winner)
            await env.client.delete(CLAIMS, name=winner, namespace=env.namespace)
            await gone(env, CLAIMS, winner)  # a volume made by hand is Retain: Released, not free
            released = await until(
                env, VOLUMES, name, lambda v: v["status"]["phase"] == "Released", "released"
            )
            assert released["spec"]["claimRef"]["name"] == winner
            left = await get(env, CLAIMS, loser)
            assert left["status"]["phase"] == "Pending"
            assert not left["spec"].get("volumeName")
            await env.client.delete(VOLUMES, name=name)

    asyncio.run(body())
