"""What a job may use: upstream's controller-ref manager, and foreign objects.

**Claim and release** (spec 4.3 step 2; Kubernetes' ``ControllerRefManager``): the job's
selector is its two labels ``operator-name`` and ``job-name``. Before planning, a pod or Service
with no controller, matching that selector and not being deleted is *adopted*: a
strategic-merge patch adds the job as its controller owner (after a fresh read of the job
confirms it is the same and not being deleted) and it is counted at once. A pod or Service the
job controls whose labels no longer match is *released*: the patch removes the job's owner
reference and it is no longer counted. Objects controlled by anyone else are never touched.
MPIJob neither adopts nor releases (upstream's MPI controller has no ref manager: an ownerless
worker pod is an ``ErrResourceExists`` conflict there, as below).

**Foreign objects** (spec 7.5, generalised to every kind and child): when a create meets
``AlreadyExists`` the object is read; if the job controls it (a cache behind the API) or can
adopt it, all is well. Otherwise it is *foreign*: it is never used or counted, a Warning
``ErrResourceExists`` (``Resource "<name>" of <Kind>Kind "<ObjectKind>" already exists and is
not managed by <Kind>``, upstream's MPI format) is recorded once per foreign object, and while
any foreign object holds one of the job's names the job creates **no pod** (for MPI: no
launcher, whose hostfile and RBAC would be someone else's). Remembered foreign objects are read
again on each reconcile (they are few; the caches do not see unlabelled objects), and the job
is looked at again every ``FOREIGN_RECHECK`` until they are gone. Creates that may reuse what
exists (``Create.reuse_existing``: the MPI launcher's ServiceAccount) are never foreign.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from trainop import errors
from trainop.api.kinds import KindInfo
from trainop.controller.caches import ORPHAN_INDEX, OwnedObjects, without_spec
from trainop.engine.actions import Action, Create, Event
from trainop.engine.naming import JOB_NAME_LABEL, OPERATOR_NAME_LABEL
from trainop.engine.observed import Observed
from trainop.kube.client import Client, Obj
from trainop.kube.resources import PODS, SERVICES, job_resource, resource_for

FOREIGN_RECHECK = timedelta(seconds=30)
ERR_RESOURCE_EXISTS = "ErrResourceExists"
_CLAIMABLE = {"Pod": PODS, "Service": SERVICES}
_NOT_ADOPTING = frozenset({"MPIJob"})

ForeignKey = tuple[str, str, str]  # apiVersion, kind, name


def controller_of(obj: Obj) -> Obj | None:
    """The object's controller owner reference, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


def exists_message(job_kind: str, kind: str, name: str) -> str:
    """Upstream's ``MessageResourceExists`` (``mpijob_controller.go``) for any job kind."""
    return (
        f'Resource "{name}" of {job_kind}Kind "{kind}" already exists'
        f" and is not managed by {job_kind}"
    )


@dataclass(slots=True)
class _Memo:
    """What one job's reconciles found foreign, and which of those were reported."""

    uid: str
    foreign: dict[ForeignKey, str] = field(default_factory=dict)  # → the foreign object's uid
    reported: set[tuple[ForeignKey, str]] = field(default_factory=set)


class Claims:
    """Claim/release of pods and Services, and foreign-object bookkeeping, for one kind."""

    def __init__(self, *, client: Client, owned: OwnedObjects, info: KindInfo) -> None:
        self._client = client
        self._owned = owned
        self._info = info
        self._adopts = info.kind not in _NOT_ADOPTING
        self._memos: dict[str, _Memo] = {}
        self.adopted = 0
        self.released = 0

    # --- claim and release -------------------------------------------------------------

    def matches(self, obj: Mapping[str, Any], job: Obj) -> bool:
        """Whether ``obj``'s labels match the job's selector (operator name and job name)."""
        labels = (obj.get("metadata") or {}).get("labels") or {}
        name = str(job["metadata"]["name"]).replace("/", "-")
        return bool(
            labels.get(OPERATOR_NAME_LABEL) == self._info.controller_name
            and labels.get(JOB_NAME_LABEL) == name
        )

    async def claim(self, job: Obj, observed: Observed) -> Observed:
        """Adopt matching orphans, release controlled mismatches; the view to plan on."""
        if not self._adopts:
            return observed
        meta = job["metadata"]
        orphan_key = f"{meta.get('namespace', '')}/{meta['name']}"
        pods = [p for p in observed.pods if self.matches(p, job)]
        services = [s for s in observed.services if self.matches(s, job)]
        released = [
            (kind, obj)
            for kind, objs in (("Pod", observed.pods), ("Service", observed.services))
            for obj in objs
            if not self.matches(obj, job)
        ]
        for kind, obj in released:
            await self._release(job, kind, obj)
        orphans = [
            (kind, obj)
            for kind, informer in (("Pod", self._owned.pods), ("Service", self._owned.services))
            for obj in informer.by_index(ORPHAN_INDEX, orphan_key)
            if self.matches(obj, job) and not obj["metadata"].get("deletionTimestamp")
        ]
        if orphans and await self._can_adopt(job):
            for kind, obj in orphans:
                adopted = await self._adopt(job, kind, obj)
                if adopted is not None:
                    (pods if kind == "Pod" else services).append(without_spec(adopted))
        if not released and not orphans:
            return observed
        return replace(observed, pods=tuple(pods), services=tuple(services))

    async def _can_adopt(self, job: Obj) -> bool:
        """Upstream's ``RecheckDeletionTimestamp``: a fresh read, same uid, not deleting."""
        meta = job["metadata"]
        try:
            fresh = await self._client.get(
                job_resource(self._info), name=meta["name"], namespace=meta.get("namespace")
            )
        except errors.NotFoundError:
            return False
        fresh_meta = fresh.get("metadata") or {}
        return fresh_meta.get("uid") == meta.get("uid") and not fresh_meta.get("deletionTimestamp")

    async def _adopt(self, job: Obj, kind: str, obj: Obj) -> Obj | None:
        meta = obj["metadata"]
        patch = {"metadata": {"ownerReferences": [_owner_reference(job)], "uid": meta.get("uid")}}
        try:
            adopted = await self._client.patch(
                _CLAIMABLE[kind], name=meta["name"], namespace=meta.get("namespace"),
                patch=patch, patch_type="strategic",
            )  # fmt: skip
        except errors.NotFoundError:
            return None
        self.adopted += 1
        return adopted

    async def _release(self, job: Obj, kind: str, obj: Mapping[str, Any]) -> None:
        meta, uid = obj["metadata"], job["metadata"].get("uid")
        patch = {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": uid}],
                              "uid": meta.get("uid")}}  # fmt: skip
        try:
            await self._client.patch(
                _CLAIMABLE[kind], name=meta["name"], namespace=meta.get("namespace"),
                patch=patch, patch_type="strategic",
            )  # fmt: skip
        except errors.NotFoundError:
            return
        self.released += 1

    # --- foreign objects ---------------------------------------------------------------

    def forget(self, key: str) -> None:
        """The job is gone (or being deleted): drop what was remembered about it."""
        self._memos.pop(key, None)

    def _memo(self, job: Obj) -> _Memo:
        meta = job["metadata"]
        key, uid = f"{meta.get('namespace', '')}/{meta['name']}", str(meta.get("uid", ""))
        memo = self._memos.get(key)
        if memo is None or memo.uid != uid:
            memo = self._memos[key] = _Memo(uid)
        return memo

    def has_foreign(self, job: Obj) -> bool:
        memo = self._memos.get(f"{job['metadata'].get('namespace', '')}/{job['metadata']['name']}")
        return memo is not None and memo.uid == job["metadata"].get("uid") and bool(memo.foreign)

    async def recheck(self, job: Obj) -> list[Event]:
        """Read the remembered foreign objects again; forget those gone or now the job's."""
        meta = job["metadata"]
        memo = self._memos.get(f"{meta.get('namespace', '')}/{meta['name']}")
        if memo is None or memo.uid != meta.get("uid"):
            return []
        events: list[Event] = []
        for key in list(memo.foreign):
            api_version, kind, name = key
            del memo.foreign[key]
            events += await self._classify(job, Create(_stub(api_version, kind, name)))
        return events

    def blocks(self, job: Obj, action: Action) -> bool:
        """Whether ``action`` must not be applied: its name is foreign, or it creates a pod
        while any of the job's names is foreign."""
        if not isinstance(action, Create) or not self.has_foreign(job):
            return False
        memo = self._memo(job)
        key = (str(action.body.get("apiVersion")), action.kind, action.name)
        return action.kind == "Pod" or key in memo.foreign

    async def exists(self, job: Obj, action: Create) -> list[Event]:
        """``action`` met AlreadyExists: ours, adoptable, or foreign (remembered, reported)."""
        if action.reuse_existing:
            return []
        return await self._classify(job, action)

    async def _classify(self, job: Obj, action: Create) -> list[Event]:
        api_version = str(action.body.get("apiVersion"))
        resource = resource_for(api_version=api_version, kind=action.kind)
        namespace = job["metadata"].get("namespace")
        try:
            existing = await self._client.get(resource, name=action.name, namespace=namespace)
        except errors.NotFoundError:
            return []  # gone meanwhile: the next plan creates it
        ref = controller_of(existing)
        uid = job["metadata"].get("uid")
        claimable = self._adopts and action.kind in _CLAIMABLE
        if ref is not None and ref.get("uid") == uid:
            if not claimable or self.matches(existing, job):
                return []  # the job's own, the cache was behind
            await self._release(job, action.kind, existing)
            ref = None
        elif ref is None and claimable and self.matches(existing, job):
            deleting = existing["metadata"].get("deletionTimestamp")
            adoptable = not deleting and await self._can_adopt(job)
            if adoptable and await self._adopt(job, action.kind, existing) is not None:
                return []
        return self._foreign(job, (api_version, action.kind, action.name), existing)

    def _foreign(self, job: Obj, key: ForeignKey, existing: Obj) -> list[Event]:
        memo = self._memo(job)
        foreign_uid = str(existing["metadata"].get("uid", ""))
        memo.foreign[key] = foreign_uid
        if (key, foreign_uid) in memo.reported:
            return []
        memo.reported.add((key, foreign_uid))
        message = exists_message(self._info.kind, key[1], key[2])
        return [Event("Warning", ERR_RESOURCE_EXISTS, message)]


def _owner_reference(job: Obj) -> Obj:
    meta = job["metadata"]
    return {
        "apiVersion": job.get("apiVersion", "kubeflow.org/v1"),
        "kind": job["kind"],
        "name": meta["name"],
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _stub(api_version: str, kind: str, name: str) -> Obj:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}}
