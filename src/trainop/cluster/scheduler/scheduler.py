"""The local scheduler: binds pods to the local node when they fit (``trainop run``/``local up``).

One informer on pods, one on each PodGroup flavour and one on PersistentVolumeClaims wake a
loop that runs ``scheduling.decide`` over everything cached and applies the decision: a
``Binding`` per pod to bind, a ``PodScheduled=False``/``Unschedulable`` condition on each pod
that waits (written only when its message changes, as kube-scheduler does), and the
PodGroups' status. Pods it
bound are remembered as bound until the informer shows them so (kube-scheduler's "assumed"
pods), so a pass that runs before the watch catches up never gives the same room twice.
Events as kube-scheduler records them (source ``default-scheduler``): ``Scheduled`` on a
binding, a ``FailedScheduling`` Warning each time a waiting pod's message changes.

The kubelet, configured with ``require_binding``, runs only bound pods. Neighbours:
``scheduling`` (the decisions), ``local.session`` (starts it and serves the PodGroup
CRDs), ``kube.http.HttpClient.bind``. See docs/design/090-local-scheduler.md.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from trainop import errors
from trainop.cluster.scheduler import scheduling
from trainop.cluster.scheduler.scheduling import COSCHEDULING, VOLCANO, Allocatable, GroupKey
from trainop.kube.client import Obj
from trainop.kube.clock import LoopClock
from trainop.kube.events import EventRecorder, ObjectRef, Source
from trainop.kube.http import HttpClient
from trainop.kube.informer import Handlers, Informer, key_of
from trainop.kube.resources import COSCHEDULING_PODGROUPS, PODS, VOLCANO_PODGROUPS, Resource

log = logging.getLogger(__name__)
CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
COMPONENT = "default-scheduler"  # what kubectl describe shows under "From"

_GROUP_RESOURCES: dict[str, Resource] = {
    VOLCANO: VOLCANO_PODGROUPS,
    COSCHEDULING: COSCHEDULING_PODGROUPS,
}


def machine_allocatable(
    *, cpus: float | None = None, memory: int | None = None, gpus: int | None = None
) -> Allocatable:
    """This machine's CPUs and memory, each overridable, and ``gpus`` NVIDIA GPUs (None: no
    GPU accounting, GPU requests run on CPU; the session counts the devices its kubelet found)."""
    if memory is None:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    cpu = Decimal(str(cpus)) if cpus is not None else Decimal(os.cpu_count() or 1)
    return Allocatable(cpu=cpu, memory=Decimal(memory), gpus=gpus)


class LocalScheduler:
    """Binds pending pods to ``node_name`` (see the module docstring)."""

    def __init__(self, *, client: HttpClient, allocatable: Allocatable, node_name: str) -> None:
        self._client = client
        self.allocatable = allocatable
        self._node = node_name
        self._wake = asyncio.Event()
        self.events = EventRecorder(
            client=client,
            clock=LoopClock(),
            source=Source(COMPONENT, host=node_name),
            aggregate=True,
        )
        self._assumed: dict[tuple[str, str], str] = {}  # pod key -> uid bound, not yet seen
        self._pods = Informer(client, PODS, handlers=[Handlers(self._changed)])
        self._groups = {
            flavour: Informer(client, resource, handlers=[Handlers(self._changed)])
            for flavour, resource in _GROUP_RESOURCES.items()
        }
        self._claims = Informer(client, CLAIMS, handlers=[Handlers(self._changed)])
        self.passes = 0

    def _changed(self, old: Obj | None, new: Obj | None) -> None:
        self._wake.set()

    async def run(self) -> None:
        """Schedule until cancelled."""
        informers = [self._pods, *self._groups.values(), self._claims]
        tasks = [
            asyncio.create_task(i.run(), name=f"scheduler-{i.resource.plural}") for i in informers
        ]
        try:
            await asyncio.gather(*(i.synced.wait() for i in informers))
            while True:
                await self._wake.wait()
                self._wake.clear()
                await asyncio.sleep(0)  # let this turn's events land first
                try:
                    await self.schedule_once()
                except Exception:  # never stop scheduling: the next change retries
                    log.exception("scheduling pass failed")
                    self._wake.set()
                    await asyncio.sleep(1.0)
        finally:
            self.events.cancel()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _pod_view(self) -> list[Obj]:
        pods = []
        for pod in self._pods.items():
            key = key_of(pod)
            uid = self._assumed.get(key)
            if uid is not None:
                if (pod.get("spec") or {}).get("nodeName") or pod["metadata"].get("uid") != uid:
                    del self._assumed[key]  # the watch has caught up (or it was replaced)
                else:
                    pod = copy.copy(pod)
                    pod["spec"] = {**pod.get("spec", {}), "nodeName": self._node}
            pods.append(pod)
        return pods

    def _group_view(self) -> dict[GroupKey, Obj]:
        groups: dict[GroupKey, Obj] = {}
        for flavour, informer in self._groups.items():
            for group in informer.items():
                namespace, name = key_of(group)
                groups[(flavour, namespace or "default", name)] = group
        return groups

    async def schedule_once(self) -> scheduling.Decision:
        """One pass: decide over the caches and apply the decision."""
        self.passes += 1
        pods = {key_of(p): p for p in self._pod_view()}
        groups = self._group_view()
        claims = {(c["metadata"].get("namespace") or "default", c["metadata"]["name"]): c
                  for c in self._claims.items()}  # fmt: skip
        decision = scheduling.decide(self.allocatable, pods.values(), groups, claims)
        for key in decision.bind:
            await self._bind(pods[key])
        for key, message in decision.unschedulable.items():
            await self._mark_unschedulable(pods[key], message)
        for group_key, status in decision.groups.items():
            await self._write_group(group_key, groups[group_key], status)
        return decision

    async def _bind(self, pod: Obj) -> None:
        namespace, name = key_of(pod)
        uid = str(pod["metadata"].get("uid") or "")
        try:
            await self._client.bind(name=name, namespace=namespace, node=self._node, uid=uid)
        except (errors.ConflictError, errors.NotFoundError) as exc:
            log.debug("binding %s/%s: %s", namespace, name, exc)
            return
        self._assumed[(namespace, name)] = uid
        message = f"Successfully assigned {namespace}/{name} to {self._node}"
        self.events.record_nowait(
            ObjectRef.pod(namespace, name, uid), "Normal", "Scheduled", message
        )

    async def _mark_unschedulable(self, pod: Obj, message: str) -> None:
        status = pod.get("status") or {}
        conditions = list(status.get("conditions") or [])
        current = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        if current and (current.get("status"), current.get("reason"), current.get("message")) == (
            "False",
            "Unschedulable",
            message,
        ):
            return
        now = self._client_now()
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastProbeTime": None,
            "lastTransitionTime": (
                current.get("lastTransitionTime")
                if current and current.get("status") == "False"
                else now
            ),
        }
        others = [c for c in conditions if c.get("type") != "PodScheduled"]
        namespace, name = key_of(pod)
        patch = {"status": {"phase": "Pending", "conditions": [condition, *others]}}
        try:
            await self._client.patch(
                PODS, name=name, namespace=namespace, patch=patch, subresource="status"
            )
        except (errors.ConflictError, errors.NotFoundError) as exc:
            log.debug("pod %s/%s status: %s", namespace, name, exc)
            return
        ref = ObjectRef.pod(namespace, name, str(pod["metadata"].get("uid") or ""))
        self.events.record_nowait(ref, "Warning", "FailedScheduling", message)

    async def _write_group(self, key: GroupKey, group: Obj, status: dict[str, Any]) -> None:
        current = group.get("status") or {}
        patch_status: dict[str, Any] = {k: None for k in current if k not in status}
        patch_status.update(status)
        try:
            await self._client.patch(
                _GROUP_RESOURCES[key[0]],
                name=key[2],
                namespace=key[1],
                patch={"status": patch_status},
                subresource="status",
            )
        except (errors.ConflictError, errors.NotFoundError) as exc:
            log.debug("podgroup %s: %s", key, exc)

    @staticmethod
    def _client_now() -> str:
        return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def podgroup_crds() -> list[dict[str, Any]]:
    """The CRDs of Volcano's and the coscheduler's PodGroup, served by a local cluster."""
    return [
        _podgroup_crd("scheduling.volcano.sh", "v1beta1", ["pg", "podgroup-v1beta1"]),
        _podgroup_crd("scheduling.x-k8s.io", "v1alpha1", ["pg", "pgs"]),
    ]


def _podgroup_crd(group: str, version: str, short: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    columns = [
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
        {"name": "MinMember", "type": "integer", "jsonPath": ".spec.minMember"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"podgroups.{group}"},
        "spec": {
            "group": group,
            "names": {
                "kind": "PodGroup",
                "listKind": "PodGroupList",
                "plural": "podgroups",
                "singular": "podgroup",
                "shortNames": short,
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                }
            ],
        },
    }
