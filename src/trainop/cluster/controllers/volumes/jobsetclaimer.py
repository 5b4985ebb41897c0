"""The claims of JobSets' ``volumeClaimPolicies``, created through the API (spec §2.2 step 8).

``JobSetClaimer`` watches JobSets and claims and creates every claim a JobSet's policies ask
for that does not exist yet (``jobsetclaims.claims``: ``<template>-<jobset>``, owned by the
JobSet when it is to be deleted with it), for each JobSet that is not being deleted and has
not finished (JobSet's pass stops before this step once ``Completed`` or ``Failed``). A create
that fails is a Warning Event ``PVCCreationFailed`` on the JobSet (its note the error), and
is retried on the next change. It runs beside the provisioner (``provisioner`` starts it):
the JobSet controller builds the child Jobs' claim volumes (``jobsetclaims.add_claim_volumes``)
but leaves the claims themselves to this loop, so that the claims exist whatever the order in
which the two controllers see a new JobSet; a pod whose claim is not there yet waits in the
scheduler until it is (note 132).
"""

from __future__ import annotations

import asyncio
import logging

from trainop import errors
from trainop.cluster.controllers.volumes import jobsetclaims
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.events import EventRecorder, ObjectRef, Source
from trainop.kube.informer import Handlers, Informer
from trainop.kube.resources import Resource

log = logging.getLogger(__name__)
JOBSETS = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet")
CLAIMS = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim")
_FINISHED = ("Completed", "Failed")
_JOBSET = Source("jobset")  # the JobSet controller reports this Event (spec §2.16)


class JobSetClaimer:
    """Creates the claims of JobSets' ``volumeClaimPolicies`` (module docstring)."""

    def __init__(self, *, client: Client, clock: Clock, events: EventRecorder) -> None:
        self._client, self._events = client, events
        self._jobsets = Informer(client, JOBSETS, sleep=clock.sleep)
        self._claims = Informer(client, CLAIMS, sleep=clock.sleep)
        self._wake = asyncio.Event()
        for informer in (self._jobsets, self._claims):
            informer.add_handlers(Handlers(lambda old, new: self._wake.set()))

    async def run(self) -> None:
        """Create claims until cancelled."""
        tasks = [asyncio.create_task(i.run()) for i in (self._jobsets, self._claims)]
        try:
            await self._jobsets.synced.wait()
            await self._claims.synced.wait()
            while True:
                self._wake.clear()
                await self.sync_once()
                await self._wake.wait()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def sync_once(self) -> None:
        """Create the missing claims of every live, unfinished JobSet."""
        present = {
            (c["metadata"].get("namespace"), c["metadata"]["name"]) for c in self._claims.items()
        }
        for jobset in self._jobsets.items():
            if jobset["metadata"].get("deletionTimestamp") or _finished(jobset):
                continue
            for claim in jobsetclaims.claims(jobset):
                key = (claim["metadata"]["namespace"], claim["metadata"]["name"])
                if key not in present:
                    await self._create(jobset, claim)

    async def _create(self, jobset: Obj, claim: Obj) -> None:
        namespace = claim["metadata"]["namespace"]
        try:
            await self._client.create(CLAIMS, claim, namespace=namespace)
        except errors.AlreadyExistsError:
            return
        except errors.ApiError as exc:
            log.warning(
                "jobset %s: claim %s: %s",
                jobset["metadata"]["name"],
                claim["metadata"]["name"],
                exc,
            )
            self._events.record_nowait(
                ObjectRef.of(jobset), "Warning", "PVCCreationFailed", str(exc)
            )


def _finished(jobset: Obj) -> bool:
    conditions = (jobset.get("status") or {}).get("conditions") or []
    return any(c.get("type") in _FINISHED and c.get("status") == "True" for c in conditions)
