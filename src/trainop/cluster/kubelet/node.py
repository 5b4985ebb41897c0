"""The local node's ``Node`` object, registered and kept ``Ready`` by the kubelet.

Role: what kubelet's node-status loop does, for the one local node. ``NodeStatus`` registers
the Node at start (creating it, or taking over the one a previous run left) with the machine's
capacity (``cpu``, ``memory``, ``pods``, ``nvidia.com/gpu`` when GPUs were found, allocatable
the same), addresses and system info, and then patches its ``Ready`` condition's
``lastHeartbeatTime`` and renews its Lease in ``kube-node-lease`` every ``interval`` seconds
(kubelet's 10 s). When the kubelet stops it
marks ``Ready`` ``Unknown`` (``NodeStatusUnknown``, the node controller's words once the
heartbeats stop). ``kubectl get nodes`` shows it; a scheduler reads ``status.allocatable``.
API errors are logged and retried on the next beat: the node never stops pods from running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import socket
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainop import errors
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.resources import LEASES, NAMESPACES, Resource

log = logging.getLogger(__name__)

NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
LEASE_NAMESPACE = "kube-node-lease"
GPU = "nvidia.com/gpu"
KUBELET_VERSION = "v1.31.0-trainop"
RUNTIME = "process://trainop"
MAX_PODS = 110
# Where the API server finds this kubelet's exec endpoint (``apiserver.streams.ANNOTATION``).
EXEC_ANNOTATION = "trainop.io/exec-address"


@dataclass(frozen=True, slots=True)
class Capacity:
    """What the node offers: CPUs, bytes of memory, GPUs."""

    cpus: float
    memory_bytes: int
    gpus: int = 0

    def resources(self) -> dict[str, str]:
        """As a Node's ``capacity``/``allocatable`` quantities."""
        whole = float(self.cpus).is_integer()
        out = {
            "cpu": str(int(self.cpus)) if whole else f"{round(self.cpus * 1000)}m",
            "memory": f"{self.memory_bytes // 1024}Ki",
            "pods": str(MAX_PODS),
            "ephemeral-storage": "0",
        }
        if self.gpus:
            out[GPU] = str(self.gpus)
        return out


def _stamp(now: datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def conditions(now: datetime, *, ready: str, since: str) -> list[dict[str, Any]]:
    """The node's conditions: pressure conditions False, ``Ready`` as given."""
    stamp = _stamp(now)
    out = [
        {
            "type": kind,
            "status": "False",
            "reason": f"KubeletHasSufficient{word}"
            if kind != "PIDPressure"
            else "KubeletHasSufficientPID",
            "message": f"kubelet has sufficient {word.lower()} available"
            if kind != "DiskPressure"
            else "kubelet has no disk pressure",
            "lastHeartbeatTime": stamp,
            "lastTransitionTime": since,
        }
        for kind, word in (
            ("MemoryPressure", "Memory"),
            ("DiskPressure", "Disk"),
            ("PIDPressure", "PID"),
        )
    ]
    reason, message = {
        "True": ("KubeletReady", "kubelet is posting ready status"),
        "Unknown": ("NodeStatusUnknown", "Kubelet stopped posting node status."),
    }[ready]
    out.append(
        {
            "type": "Ready",
            "status": ready,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": stamp,
            "lastTransitionTime": since,
        }
    )
    return out


def node_object(
    name: str, capacity: Capacity, now: datetime, host_ip: str, *, exec_address: str = ""
) -> Obj:
    """A new Node for this machine."""
    machine = platform.machine()
    arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
    hostname = socket.gethostname()
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": arch,
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": arch,
            },
            "annotations": {EXEC_ANNOTATION: exec_address} if exec_address else {},
        },
        "spec": {},
        "status": {
            "capacity": capacity.resources(),
            "allocatable": capacity.resources(),
            "conditions": conditions(now, ready="True", since=_stamp(now)),
            "addresses": [
                {"type": "InternalIP", "address": host_ip},
                {"type": "Hostname", "address": hostname},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": {
                "machineID": _machine_id(),
                "systemUUID": _machine_id(),
                "bootID": _boot_id(),
                "kernelVersion": platform.release(),
                "osImage": _os_image(),
                "containerRuntimeVersion": RUNTIME,
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": arch,
            },
        },
    }


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _machine_id() -> str:
    return _read("/etc/machine-id")


def _boot_id() -> str:
    return _read("/proc/sys/kernel/random/boot_id")


def _os_image() -> str:
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.partition("=")[2].strip('"')
    return platform.system()


class NodeStatus:
    """Registers the Node and beats its ``Ready`` condition (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        *,
        name: str,
        capacity: Capacity,
        host_ip: str,
        clock: Clock,
        interval: float = 10.0,
        exec_address: str = "",
    ) -> None:
        self._exec_address = exec_address
        self._client = client
        self._name = name
        self._capacity = capacity
        self._host_ip = host_ip
        self._clock = clock
        self._interval = interval
        self._since = ""
        self.beats = 0

    async def run(self) -> None:
        """Register, then beat every ``interval`` until cancelled; then mark ``Unknown``."""
        try:
            while True:
                await self._beat()
                await self._clock.sleep(self._interval)
        finally:
            await asyncio.shield(self._stopped())

    async def _beat(self) -> None:
        now = self._clock.now()
        try:
            if not self._since:
                await self._register(now)
            else:
                await self._patch(now, ready="True")
            self.beats += 1
            await self._renew_lease(now)
        except errors.ApiError as exc:
            log.warning("could not update node %s: %s", self._name, exc)
            self._since = "" if isinstance(exc, errors.NotFoundError) else self._since

    async def _renew_lease(self, now: datetime) -> None:
        """The node's Lease in ``kube-node-lease`` (what ``kubectl describe node`` reads)."""
        renew = now.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        try:
            await self._client.patch(
                LEASES,
                name=self._name,
                namespace=LEASE_NAMESPACE,
                patch={"spec": {"renewTime": renew}},
            )
            return
        except errors.NotFoundError:
            pass
        with contextlib.suppress(errors.AlreadyExistsError):
            await self._client.create(
                NAMESPACES,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LEASE_NAMESPACE}},
            )
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self._name, "namespace": LEASE_NAMESPACE},
            "spec": {
                "holderIdentity": self._name,
                "leaseDurationSeconds": 40,
                "renewTime": renew,
            },
        }
        with contextlib.suppress(errors.AlreadyExistsError):
            await self._client.create(LEASES, lease, namespace=LEASE_NAMESPACE)

    async def _register(self, now: datetime) -> None:
        node = node_object(
            self._name, self._capacity, now, self._host_ip, exec_address=self._exec_address
        )
        try:
            await self._client.create(NODES, node)
        except errors.AlreadyExistsError:
            self._since = _stamp(now)
            meta = {"labels": node["metadata"]["labels"]}
            meta["annotations"] = {EXEC_ANNOTATION: self._exec_address or None}
            await self._client.patch(NODES, name=self._name, patch={"metadata": meta})
            await self._client.patch(
                NODES, name=self._name, patch={"status": node["status"]}, subresource="status"
            )
            return
        self._since = _stamp(now)

    async def _patch(self, now: datetime, *, ready: str) -> None:
        status = {
            "capacity": self._capacity.resources(),
            "allocatable": self._capacity.resources(),
            "conditions": conditions(now, ready=ready, since=self._since or _stamp(now)),
        }
        await self._client.patch(
            NODES, name=self._name, patch={"status": status}, subresource="status"
        )

    async def _stopped(self) -> None:
        if not self._since:
            return
        try:
            now = self._clock.now()
            self._since = _stamp(now)
            await asyncio.wait_for(self._patch(now, ready="Unknown"), timeout=2)
        except Exception as exc:  # best effort: the client may already be closing
            log.debug("could not mark node %s Unknown: %s", self._name, exc)


def local_capacity(
    cpus: float | None = None, memory_bytes: int | None = None, gpus: int = 0
) -> Capacity:
    """This machine's capacity (or the given overrides)."""
    page = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return Capacity(cpus=cpus or os.cpu_count() or 1, memory_bytes=memory_bytes or page, gpus=gpus)
