"""``trainop run`` of a TrainJob manifest (note 133): the TrainJob, optionally its runtimes.

A manifest whose documents are one ``TrainJob`` plus any ``TrainingRuntime`` or
``ClusterTrainingRuntime`` (what ``trainop convert`` prints) runs in the same local session as
a v1 job: the runtimes are created first (a shipped ClusterTrainingRuntime such as
``torch-distributed`` is already installed by the session), then the TrainJob, and
``sdk.trainjob_follow`` prints its conditions and its pods' lines prefixed with the replicated
job and indexes (``[node-0-1]``). Exit status: 0 when the TrainJob is ``Complete``, 1 when it
``Failed`` (naming the first container that exited non-zero), 2 when the API server refuses
the manifest (admission runs the TrainJob and runtime webhooks' rules), 124 on ``--timeout``;
Ctrl-C deletes the TrainJob (its JobSet, Jobs and pods go with it) before the session stops
every process and removes its state.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

from trainop import errors
from trainop.api.trainer import constants as c
from trainop.controller.trainjob_caches import TRAINJOBS
from trainop.kube.http import HttpClient
from trainop.sdk import reporting, trainjob_follow
from trainop.sdk.reporting import Reporter

RUNTIME_KINDS = (c.TRAINING_RUNTIME, c.CLUSTER_TRAINING_RUNTIME)


@dataclass(frozen=True, slots=True)
class TrainJobManifest:
    """The TrainJob of a manifest and the runtimes that came with it."""

    trainjob: dict[str, Any]
    runtimes: list[dict[str, Any]]

    @property
    def name(self) -> str:
        return str(self.trainjob["metadata"].get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.trainjob["metadata"].get("namespace") or "default")

    @property
    def title(self) -> str:
        return f"TrainJob/{self.name}"


def trainjob_manifest(
    documents: list[dict[str, Any]], *, source: str, namespace: str | None
) -> TrainJobManifest | None:
    """The TrainJob manifest among ``documents``; None when they hold no TrainJob."""
    trainjobs = [
        d for d in documents if d.get("apiVersion") == c.API_VERSION and d.get("kind") == c.TRAINJOB
    ]
    if not trainjobs:
        return None
    others = [d for d in documents if d not in trainjobs and d.get("kind") not in RUNTIME_KINDS]
    if len(trainjobs) != 1 or others:
        raise errors.ManifestError(
            f"{source}: expected one TrainJob and its runtimes, found "
            + ", ".join(str(d.get("kind")) for d in documents)
        )
    trainjob = trainjobs[0]
    if not isinstance(trainjob.get("metadata"), dict) or not trainjob["metadata"].get("name"):
        raise errors.ManifestError(f"{source}: the TrainJob has no metadata.name")
    runtimes = [d for d in documents if d.get("kind") in RUNTIME_KINDS]
    if namespace:
        for document in [trainjob, *runtimes]:
            if document.get("kind") != c.CLUSTER_TRAINING_RUNTIME:
                document.setdefault("metadata", {})["namespace"] = namespace
    return TrainJobManifest(trainjob, runtimes)


async def follow(
    client: HttpClient, job: TrainJobManifest, *, reporter: Reporter
) -> reporting.Outcome:
    """Create ``job``'s runtimes, then the TrainJob, and follow it until it ends."""
    await trainjob_follow.create_runtimes(client, job.runtimes, job.namespace)
    return await trainjob_follow.run_trainjob(client, job.trainjob, reporter=reporter)


def refused(exc: errors.ApiError) -> bool:
    """Whether the API server refused the manifest itself (schema, API rules, webhooks)."""
    return exc.status in (403, 422)


async def delete(client: HttpClient, job: TrainJobManifest) -> None:
    """Delete the TrainJob; its JobSet, Jobs and pods go with it (ownerReferences)."""
    with contextlib.suppress(errors.ApiError):
        await client.delete(
            TRAINJOBS, name=job.name, namespace=job.namespace, propagation_policy="Foreground"
        )
