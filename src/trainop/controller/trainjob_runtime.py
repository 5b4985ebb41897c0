"""Which runtime a TrainJob runs on: the snapshot first, then the live runtime (spec 2.3).

Trainer v2.3.0 pins a TrainJob to the runtime it first ran with: the runtime object is copied
into the ConfigMap ``<tj>-runtime-snapshot`` on the first pass (the planner adds it to the
objects to apply while it is absent), and every later pass reads the runtime from there, so
edits to (or deletion of) the runtime do not reach running jobs. ``resolve`` reads it:

- a snapshot ConfigMap is cached → the runtime inside it (``engine.trainer.snapshot`` checks
  owner, key, shape and reference with upstream's messages; its ``SnapshotError``, prefixed per
  kind as upstream does, aborts the pass — the reconciler records it and retries);
- otherwise the live runtime, from its informer, and on a miss once more from the API: a
  runtime created just before the TrainJob may not be cached yet, and a missing runtime is
  terminal (the planner fails the TrainJob with ``TrainingRuntimeNotSupported`` and upstream's
  not-found message, where upstream records an event and retries forever; docs/design/112);
- an unsupported runtimeRef kind or group → None (the planner says why).
``live_lookup`` is the webhook's reader, which upstream points at the live runtime only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from trainop import errors
from trainop.api.trainer import constants as c
from trainop.controller.trainjob_caches import JOBSETS, RUNTIME_RESOURCES, TrainJobCaches
from trainop.engine.trainer import plan as planner
from trainop.engine.trainer import snapshot
from trainop.kube.client import Client, Obj


class ResolutionError(errors.TrainopError):
    """The snapshot cannot be used this pass: recorded in the Warning event, retried."""


def runtime_ref(trainjob: Obj) -> tuple[str, str]:
    """(kind, name) of the runtimeRef, the kind defaulted as the CRD does."""
    ref = (trainjob.get("spec") or {}).get("runtimeRef") or {}
    return str(ref.get("kind") or c.CLUSTER_TRAINING_RUNTIME), str(ref.get("name") or "")


async def resolve(client: Client, caches: TrainJobCaches, trainjob: Obj) -> Obj | None:
    """The runtime object ``trainjob`` runs on; None when there is none it can use."""
    if not planner.is_supported(trainjob):
        return None
    kind, name = runtime_ref(trainjob)
    found = snapshot_of(caches, trainjob)
    if found is not None:
        try:
            return snapshot.runtime_from_snapshot(trainjob, found)
        except snapshot.SnapshotError as exc:
            raise ResolutionError(f"{snapshot.ERROR_PREFIXES[kind]}{exc}") from exc
    namespace = str(trainjob["metadata"].get("namespace") or "")
    cached = caches.runtime(kind, namespace, name)
    return cached if cached is not None else await live_lookup(client)(kind, namespace, name)


def snapshot_of(caches: TrainJobCaches, trainjob: Obj) -> Obj | None:
    namespace = str(trainjob["metadata"].get("namespace") or "")
    return caches.config_maps.get(namespace, snapshot.name(trainjob))


def live_lookup(client: Client) -> Callable[[str, str, str], Awaitable[Obj | None]]:
    """A reader of live runtimes and JobSets (kind, namespace, name → the object, or None when
    absent), as the webhook reads them."""

    async def lookup(kind: str, namespace: str, name: str) -> Obj | None:
        resource = JOBSETS if kind == c.JOBSET else RUNTIME_RESOURCES[kind]
        try:
            return await client.get(
                resource, name=name, namespace=namespace if resource.namespaced else None
            )
        except errors.NotFoundError:
            return None

    return lookup
