"""The local provisioner: binds PersistentVolumeClaims to directories of the session's state.

What kube-controller-manager's persistent-volume and pvc-protection controllers and a
local-path dynamic provisioner do, for one node. ``LocalProvisioner.run`` first makes sure the
default StorageClass ``standard`` exists (``binding.default_class``), then, woken by any change
of a claim, a volume or a pod (and at least every ``PASS_SECONDS``), makes one pass:

1. each live claim: ``binding.claim_step``; a provisioned volume gets its directory
   (``directories.create``) before the volume is created, then the volume's ``claimRef``,
   the claim's ``spec.volumeName`` and annotations, and the claim's status are written, in
   that order, so a claim that says ``Bound`` always names a volume whose directory exists;
2. each claim being deleted: its ``kubernetes.io/pvc-protection`` finalizer is removed once
   no pod that has not finished mounts it (the API server then deletes it);
3. each volume: ``binding.volume_step``; reclaiming a ``Delete`` volume removes its directory
   first (only one this provisioner made: ``directories.owns``), then the volume.

Errors of one object are logged and retried on the next pass. Events (source
``persistentvolume-controller``): ``ProvisioningSucceeded`` (``ProvisioningFailed``) on the
claim. Beside it runs ``jobsetclaimer.JobSetClaimer``, which makes JobSets' claims. Neighbours:
``binding`` (the decisions), ``directories``, ``local.session`` (starts it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainop import errors
from trainop.cluster.controllers.volumes import binding, directories
from trainop.cluster.controllers.volumes.jobsetclaimer import JobSetClaimer
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.events import EventRecorder, ObjectRef, Source
from trainop.kube.informer import Handlers, Informer
from trainop.kube.resources import PODS, Resource

log = logging.getLogger(__name__)
CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
VOLUMES = Resource("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False)
CLASSES = Resource("storage.k8s.io", "v1", "storageclasses", "StorageClass", namespaced=False)
PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
COMPONENT = "persistentvolume-controller"
PASS_SECONDS = 2.0


class LocalProvisioner:
    """Binds claims to volumes in ``root`` (see the module docstring)."""

    def __init__(self, *, client: Client, clock: Clock, root: Path) -> None:
        self._client, self._clock, self._root = client, clock, root
        self._claims = Informer(client, CLAIMS, sleep=clock.sleep)
        self._volumes = Informer(client, VOLUMES, sleep=clock.sleep)
        self._classes = Informer(client, CLASSES, sleep=clock.sleep)
        self._pods = Informer(client, PODS, sleep=clock.sleep)
        self._informers = (self._claims, self._volumes, self._classes, self._pods)
        self._wake = asyncio.Event()
        for informer in self._informers:
            informer.add_handlers(Handlers(lambda old, new: self._wake.set()))
        self.events = EventRecorder(
            client=client, clock=clock, source=Source(COMPONENT), aggregate=True
        )
        self.passes = 0

    async def run(self) -> None:
        """Provision and reclaim until cancelled."""
        tasks = [asyncio.create_task(i.run()) for i in self._informers]
        try:
            await self._ensure_default_class()  # before any claim of a JobSet is made
            claimer = JobSetClaimer(client=self._client, clock=self._clock, events=self.events)
            tasks.append(asyncio.create_task(claimer.run(), name="jobset-claims"))
            for informer in self._informers:
                await informer.synced.wait()
            while True:
                self._wake.clear()
                await self.sync_once()
                ticker = asyncio.create_task(self._clock.sleep(PASS_SECONDS))
                waker = asyncio.create_task(self._wake.wait())
                await asyncio.wait({ticker, waker}, return_when=asyncio.FIRST_COMPLETED)
                for task in (ticker, waker):
                    task.cancel()
        finally:
            self.events.cancel()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _ensure_default_class(self) -> None:
        try:
            await self._client.create(CLASSES, binding.default_class())
        except errors.AlreadyExistsError:
            return

    async def sync_once(self) -> None:
        """One pass over every cached claim and volume (module docstring)."""
        self.passes += 1
        volumes = {str(v["metadata"]["name"]): v for v in self._volumes.items()}
        classes = {str(c["metadata"]["name"]): c for c in self._classes.items()}
        claims = {_key(c): c for c in self._claims.items()}
        used = binding.claims_in_use(self._pods.items())
        for claim in claims.values():
            try:
                if claim["metadata"].get("deletionTimestamp"):
                    await self._release(claim, used)
                else:
                    await self._claim(claim, volumes, classes)
            except (errors.ApiError, directories.DirectoryError) as exc:
                log.warning("claim %s/%s: %s; retrying", *_key(claim), exc)
        for volume in volumes.values():
            try:
                await self._volume(volume, claims)
            except (errors.ApiError, directories.DirectoryError, OSError) as exc:
                log.warning("volume %s: %s; retrying", volume["metadata"]["name"], exc)

    async def _claim(
        self, claim: Obj, volumes: Mapping[str, Obj], classes: Mapping[str, Obj]
    ) -> None:
        name = binding.volume_name(claim)
        directory = str(directories.path_for(self._root, name))
        step = binding.claim_step(claim, volumes, classes, directory=directory)
        namespace, claim_name = _key(claim)
        if step.assign_class:  # kube's retroactive default class
            patch = {"spec": {"storageClassName": step.assign_class}}
            await self._client.patch(CLAIMS, name=claim_name, namespace=namespace, patch=patch)
            return
        if step.create is not None:
            directories.create(self._root, name)
            # AlreadyExists: made by an earlier pass whose watch event has not arrived
            with contextlib.suppress(errors.AlreadyExistsError):
                await self._client.create(VOLUMES, step.create)
        if step.bind:
            if not await self._bind_volume(step.bind, claim):
                return  # another claim took it first: the next pass looks again
            patch = _bound_patch(claim, step)
            if patch:
                await self._client.patch(CLAIMS, name=claim_name, namespace=namespace, patch=patch)
        if step.status is not None:
            await self._client.patch(
                CLAIMS,
                name=claim_name,
                namespace=namespace,
                patch={"status": step.status},
                subresource="status",
            )
        if step.event is not None:
            self.events.record_nowait(ObjectRef.of(claim), *step.event)

    async def _bind_volume(self, name: str, claim: Obj) -> bool:
        """Point the volume's ``claimRef`` at ``claim`` (if it does not already); False when
        it names another claim (read fresh: two claims of one pass may want one volume)."""
        volume = await self._client.get(VOLUMES, name=name)
        ref = volume["spec"].get("claimRef") or {}
        if ref and not binding.refers_to(volume, claim):
            return False
        if not ref.get("uid"):  # a compare-and-swap on resourceVersion: no lost race
            rv = volume["metadata"].get("resourceVersion")
            patch = {
                "metadata": {"resourceVersion": rv},
                "spec": {"claimRef": binding.claim_ref(claim)},
            }
            try:
                await self._client.patch(VOLUMES, name=name, patch=patch)
            except errors.ConflictError:
                return False
        if (volume.get("status") or {}).get("phase") != "Bound":
            await self._client.patch(
                VOLUMES, name=name, patch={"status": {"phase": "Bound"}}, subresource="status"
            )
        return True

    async def _release(self, claim: Obj, used: set[tuple[str, str]]) -> None:
        finalizers = list(claim["metadata"].get("finalizers") or [])
        if PROTECTION_FINALIZER not in finalizers or _key(claim) in used:
            return
        namespace, name = _key(claim)
        rest = [f for f in finalizers if f != PROTECTION_FINALIZER]
        patch = {
            "metadata": {
                "finalizers": rest or None,
                "resourceVersion": claim["metadata"].get("resourceVersion"),
            }
        }
        try:
            await self._client.patch(CLAIMS, name=name, namespace=namespace, patch=patch)
        except (errors.NotFoundError, errors.ConflictError):
            return  # gone already, or changed: the next pass sees it

    async def _volume(self, volume: Obj, claims: Mapping[tuple[str, str], Obj]) -> None:
        step = binding.volume_step(volume, claims)
        name = str(volume["metadata"]["name"])
        if step.delete:
            if self._provisioned_here(volume):
                directories.remove(self._root, name)
            try:
                await self._client.delete(VOLUMES, name=name)
            except errors.NotFoundError:
                return
            return
        if step.status is not None:
            await self._client.patch(
                VOLUMES, name=name, patch={"status": step.status}, subresource="status"
            )

    def _provisioned_here(self, volume: Obj) -> bool:
        annotations = volume["metadata"].get("annotations") or {}
        path = ((volume.get("spec") or {}).get("hostPath") or {}).get("path")
        ours = annotations.get(binding.PROVISIONED_BY) == binding.PROVISIONER
        return ours and directories.owns(self._root, str(volume["metadata"]["name"]), path)


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj["metadata"]
    return (str(meta.get("namespace") or ""), str(meta["name"]))


def _bound_patch(claim: Obj, step: binding.ClaimStep) -> dict[str, Any]:
    """The claim's binding: ``spec.volumeName`` and the PV controller's annotations."""
    annotations = {binding.BIND_COMPLETED: "yes"}
    if not (claim.get("spec") or {}).get("volumeName"):
        annotations[binding.BOUND_BY_CONTROLLER] = "yes"
    if step.create is not None:
        annotations |= dict.fromkeys(binding.STORAGE_PROVISIONER, binding.PROVISIONER)
    current = claim["metadata"].get("annotations") or {}
    if (claim.get("spec") or {}).get("volumeName") == step.bind and all(
        current.get(k) == v for k, v in annotations.items()
    ):
        return {}
    return {"metadata": {"annotations": annotations}, "spec": {"volumeName": step.bind}}
