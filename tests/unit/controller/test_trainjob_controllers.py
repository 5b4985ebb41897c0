"""Trainer v2's controllers on the manager (``--enable-scheme trainjob``), through a FakeClient.

Readiness names the JobSet CRD while it is not served and heals once it is; the runtime
controllers strip the legacy finalizer; TrainJob is enabled only when named; the status
merge patch; one pass: an unsupported runtime kind fails the TrainJob, ``managedBy`` another
controller is left alone, a failed apply is one Warning event cut at 950 characters.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import click
import pytest

from tests.polling import until
from trainop import errors
from trainop.api.trainer import constants as c
from trainop.cli.operator import config_from_flags
from trainop.cli.operator import operator as operator_command
from trainop.controller.manager import Manager, ManagerOptions
from trainop.controller.trainjob import status_patch
from trainop.controller.trainjob_caches import (
    CLUSTER_TRAINING_RUNTIMES,
    JOBSETS,
    TRAINING_RUNTIMES,
    TRAINJOBS,
    controlling_trainjob,
)
from trainop.kube.clock import FakeClock
from trainop.kube.fake import FakeClient
from trainop.kube.resources import CONFIGMAPS, EVENTS, Resource

Body = Callable[[FakeClient, FakeClock, Manager], Awaitable[None]]


def run(
    options: ManagerOptions, body: Body, *, prepare: Callable[[FakeClient], None] | None = None
) -> None:
    async def main() -> None:
        client, clock = FakeClient(), FakeClock()
        if prepare is not None:
            prepare(client)
        manager = Manager(client=client, clock=clock, options=options)
        task = asyncio.create_task(manager.run())
        try:
            await body(client, clock, manager)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())


TRAINJOB_ONLY = ManagerOptions(kinds=(c.TRAINJOB,))


def test_trainjob_is_enabled_only_when_named() -> None:
    assert not ManagerOptions().trainjobs
    assert len(ManagerOptions().enabled()) == 8, "the default stays the v1 kinds"
    assert TRAINJOB_ONLY.trainjobs
    assert TRAINJOB_ONLY.enabled() == []
    both = ManagerOptions(kinds=("PyTorchJob", c.TRAINJOB))
    assert [info.kind for info in both.enabled()] == ["PyTorchJob"]
    assert both.trainjobs


def test_readiness_names_the_jobset_crd_until_it_is_served() -> None:
    def no_jobsets(client: FakeClient) -> None:
        client.inject("list", errors.NotFoundError("no such resource", status=404),
                      resource=JOBSETS, times=2)  # fmt: skip

    async def body(client: FakeClient, clock: FakeClock, manager: Manager) -> None:
        async def check_asleep() -> bool:  # the check answered "missing" and waits to repeat
            return clock.pending > 0

        for _ in range(2):  # missing at the first check and at the second
            await until(check_asleep, timeout=10, interval=0)
            assert c.JOBSET_CRD_NAME in manager.not_ready_reason
            assert not manager.ready
            clock.advance(10)

        async def ready() -> bool:
            return manager.ready

        await until(ready, timeout=10, interval=0)

    run(TRAINJOB_ONLY, body, prepare=no_jobsets)


@pytest.mark.parametrize("resource", [TRAINING_RUNTIMES, CLUSTER_TRAINING_RUNTIMES])
def test_runtime_controllers_strip_the_legacy_finalizer(resource: Resource) -> None:
    namespace = "default" if resource.namespaced else None
    runtime = {
        "apiVersion": c.API_VERSION,
        "kind": resource.kind,
        "metadata": {"name": "torch", "finalizers": [c.LEGACY_RUNTIME_FINALIZER, "keep.me/x"]},
        "spec": {},
    }

    async def body(client: FakeClient, clock: FakeClock, manager: Manager) -> None:
        await client.create(resource, runtime, namespace=namespace)

        async def stripped() -> bool:
            found = await client.get(resource, name="torch", namespace=namespace)
            return found["metadata"].get("finalizers") == ["keep.me/x"]

        await until(stripped, timeout=10, interval=0)

    run(TRAINJOB_ONLY, body)


def test_the_status_merge_patch_removes_what_is_gone_and_replaces_lists() -> None:
    old = {"conditions": [{"type": "Suspended"}], "jobsStatus": [{"name": "node"}]}
    new = {"conditions": [{"type": "Suspended"}, {"type": "Complete"}]}
    assert status_patch(old, new) == {"conditions": new["conditions"], "jobsStatus": None}
    assert status_patch({}, new) == new


def test_only_a_trainjob_controller_reference_queues_a_trainjob() -> None:
    def child(**ref: object) -> dict[str, object]:
        base = {"apiVersion": c.API_VERSION, "kind": c.TRAINJOB, "name": "tj", "controller": True}
        return {"metadata": {"namespace": "ns", "ownerReferences": [{**base, **ref}]}}

    assert controlling_trainjob(child()) == "ns/tj"
    assert controlling_trainjob(child(controller=False)) is None
    assert controlling_trainjob(child(apiVersion="kubeflow.org/v1")) is None


def test_enable_scheme_trainjob_like_the_other_kinds() -> None:
    flags = ["--enable-scheme", "trainjob", "--enable-scheme", "PyTorchJob"]
    context = operator_command.make_context("operator", flags)
    config = config_from_flags(context.params)
    assert config.manager.kinds == (c.TRAINJOB, "PyTorchJob")
    assert config.manager.trainjobs
    with pytest.raises(click.BadParameter, match="scheme jobset is not supported yet"):
        operator_command.make_context("operator", ["--enable-scheme", "jobset"])


# --- one pass, through the manager on a FakeClient ------------------------------------------------


def _runtime() -> dict[str, object]:
    pod = {"spec": {"containers": [{"name": c.NODE, "image": "img"}]}}
    job = {"name": c.NODE, "replicas": 1, "template": {
        "metadata": {"labels": {c.LABEL_ANCESTOR: c.ANCESTOR_TRAINER}},
        "spec": {"template": pod}}}  # fmt: skip
    return {"apiVersion": c.API_VERSION, "kind": c.TRAINING_RUNTIME,
            "metadata": {"name": "plain", "namespace": "default"},
            "spec": {"template": {"spec": {"replicatedJobs": [job]}}}}  # fmt: skip


def _trainjob(name: str, *, kind: str = c.TRAINING_RUNTIME, **spec: object) -> dict[str, object]:
    ref = {"name": "plain", "kind": kind, "apiGroup": c.GROUP}
    return {"apiVersion": c.API_VERSION, "kind": c.TRAINJOB,
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"runtimeRef": ref, **spec}}  # fmt: skip


async def _drained(manager: Manager) -> bool:
    queue = manager.queues[c.TRAINJOB]
    return manager.ready and not queue.depth and not queue.in_flight


def test_an_unsupported_runtime_kind_fails_the_trainjob() -> None:
    async def body(client: FakeClient, clock: FakeClock, manager: Manager) -> None:
        await client.create(TRAINJOBS, _trainjob("odd", kind="Foo"), namespace="default")

        async def failed() -> object:
            found = await client.get(TRAINJOBS, name="odd", namespace="default")
            return (found.get("status") or {}).get("conditions")

        [condition] = await until(failed, timeout=10, interval=0)
        assert (condition["type"], condition["status"], condition["reason"]) == (
            "Failed",
            "True",
            c.REASON_RUNTIME_NOT_SUPPORTED,
        )
        assert condition["message"] == "unsupported runtime: Foo.trainer.kubeflow.org"

    run(TRAINJOB_ONLY, body)


def test_a_trainjob_managed_elsewhere_is_left_alone() -> None:
    async def body(client: FakeClient, clock: FakeClock, manager: Manager) -> None:
        await client.create(TRAINING_RUNTIMES, _runtime(), namespace="default")
        kueue = _trainjob("kueue", managedBy=c.MANAGED_BY_MULTIKUEUE)
        await client.create(TRAINJOBS, kueue, namespace="default")
        await client.create(TRAINJOBS, _trainjob("ours"), namespace="default")

        async def ours_applied() -> bool:
            names = [o["metadata"]["name"] for o in (await client.list(JOBSETS)).items]
            return names == ["ours"] and await _drained(manager)

        await until(ours_applied, timeout=10, interval=0)
        found = await client.get(TRAINJOBS, name="kueue", namespace="default")
        assert "status" not in found or not found["status"]
        config_maps = [o["metadata"]["name"] for o in (await client.list(CONFIGMAPS)).items]
        assert config_maps == [f"ours{c.SNAPSHOT_SUFFIX}"], "no snapshot for the Kueue job"

    run(TRAINJOB_ONLY, body)


def test_a_failed_apply_is_one_warning_event_cut_at_950_characters() -> None:
    reason = "x" * 2000

    async def body(client: FakeClient, clock: FakeClock, manager: Manager) -> None:
        await client.create(TRAINING_RUNTIMES, _runtime(), namespace="default")
        client.inject("patch", errors.ApiError(reason, status=500), resource=JOBSETS)
        await client.create(TRAINJOBS, _trainjob("job"), namespace="default")

        async def warned() -> list[dict[str, object]]:
            found = (await client.list(EVENTS)).items
            return [e for e in found if e.get("reason") == c.EVENT_REASON_CREATION_FAILED]

        [event] = await until(warned, timeout=10, interval=0)
        assert event["type"] == "Warning"
        assert event["message"] == (
            "TrainJob resources reconciliation failed: " + "x" * 950 + " ..."
        )
        assert event["source"] == {"component": "trainer-trainjob-controller"}
        clock.advance(1)  # the retry's backoff: the JobSet is applied this time

        async def applied() -> bool:
            return len((await client.list(JOBSETS)).items) == 1

        await until(applied, timeout=10, interval=0)

    run(TRAINJOB_ONLY, body)


def test_g9_the_deadline_waits_while_suspended_and_counts_from_the_resume() -> None:
    async def body(client: FakeClient, clock: FakeClock, manager: Manager) -> None:
        await client.create(TRAINING_RUNTIMES, _runtime(), namespace="default")
        job = _trainjob("slow", suspend=True, activeDeadlineSeconds=2)
        job["metadata"]["creationTimestamp"] = clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        await client.create(TRAINJOBS, job, namespace="default")

        async def reasons() -> list[object]:
            found = await client.get(TRAINJOBS, name="slow", namespace="default")
            return [x.get("reason") for x in (found.get("status") or {}).get("conditions") or []]

        async def settled() -> bool:
            return bool(await reasons()) and await _drained(manager)

        await until(settled, timeout=10, interval=0)
        clock.advance(60)  # suspended: no deadline
        await until(settled, timeout=10, interval=0)
        assert await reasons() == [c.REASON_SUSPENDED]
        patch = {"spec": {"suspend": False}}
        await client.patch(TRAINJOBS, name="slow", namespace="default", patch=patch)

        async def resumed() -> bool:
            return await reasons() == [c.REASON_RESUMED] and await _drained(manager)

        await until(resumed, timeout=10, interval=0)
        clock.advance(1)  # 1 s after the resume: still running
        await until(resumed, timeout=10, interval=0)
        clock.advance(1.5)  # the requeue at the deadline fires

        async def failed() -> bool:
            jobsets = (await client.list(JOBSETS)).items
            return await reasons() == [c.REASON_RESUMED, c.REASON_DEADLINE_EXCEEDED] and not jobsets

        await until(failed, timeout=10, interval=0)

    run(TRAINJOB_ONLY, body)
