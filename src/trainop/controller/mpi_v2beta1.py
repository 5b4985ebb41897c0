"""Reconcile MPIJobs with v2beta1 semantics: read → ``engine.mpi_v2beta1.plan`` → apply → status.

The MPIJob kind's ``JobReconciler`` hands every job with v2beta1 semantics
(``api.mpi_v2beta1.is_v2beta1_job``; docs/design/100) to this reconciler, keyed by kind in
``VERSION_RECONCILERS``. What it reads it reads by name from the API (the Service, ConfigMap,
Secret and launcher Job carry only ``app: <job>``, as mpi-operator's, so objects mpi-operator
made are found too) plus two label-selected pod lists; while the job is not finished it looks
again every ``POLL`` seconds, since the launcher Job's progress reaches no informer of the
v1 controller. An object with one of the job's names that another controller owns is never
used: Warning ``ErrResourceExists`` and a retry (spec 5.4). Events carry the component
``mpi-job-controller``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from prometheus_client import Counter, Gauge

from trainop import errors
from trainop.api import mpi_v2beta1 as api
from trainop.api.kinds import MPIJOB
from trainop.api.types import JobStatus
from trainop.controller.clock import Clock
from trainop.controller.events import EventRecorder
from trainop.controller.metrics import Metrics
from trainop.controller.reconciler import Result
from trainop.controller.sshkeys import new_key_pair
from trainop.engine import conditions
from trainop.engine import mpi_v2beta1 as engine
from trainop.engine.actions import Action, Create, Delete, Event, Update
from trainop.engine.gang import scheduler_for
from trainop.frameworks import mpi_v2beta1 as objects
from trainop.frameworks.base import FrameworkOptions
from trainop.kube.client import Client, Obj
from trainop.kube.resources import CONFIGMAPS, PODS, SECRETS, SERVICES, job_resource, resource_for

COMPONENT = "mpi-job-controller"
POLL = timedelta(seconds=2)
LAUNCHER_JOBS = resource_for(api_version="batch/v1", kind="Job")


class MpiOperatorMetrics:
    """mpi-operator's own metrics (mpi-v2beta1-spec 5.2) on the operator's registry, so
    dashboards built on them keep working: jobs created, successful and failed (evictions not
    counted), and ``mpi_operator_job_info{launcher, namespace}`` = 1 per launcher Job."""

    def __init__(self, metrics: Metrics) -> None:
        registry = metrics.registry
        self.created = Counter(
            "mpi_operator_jobs_created", "Counts number of MPI jobs created", registry=registry
        )
        self.successful = Counter(
            "mpi_operator_jobs_successful",
            "Counts number of MPI jobs successful",
            registry=registry,
        )
        self.failed = Counter(
            "mpi_operator_jobs_failed", "Counts number of MPI jobs failed", registry=registry
        )
        self.job_info = Gauge(
            "mpi_operator_job_info",
            "Information about MPIJob",
            ("launcher", "namespace"),
            registry=registry,
        )

    def count(self, old: JobStatus, new: JobStatus) -> None:
        before = {c.type for c in old.conditions or () if c.status == "True"}
        after = {c.type: c for c in new.conditions or () if c.status == "True"}
        if not old.conditions and new.conditions:
            self.created.inc()
        if "Succeeded" in after and "Succeeded" not in before:
            self.successful.inc()
        failed = after.get("Failed")
        if failed is not None and "Failed" not in before and failed.reason != "MPIJobEvicted":
            self.failed.inc()


class V2Beta1Reconciler:
    """Reconciles one MPIJob with v2beta1 semantics per call (stateless between calls)."""

    def __init__(
        self,
        *,
        client: Client,
        clock: Clock,
        recorder: EventRecorder,
        cluster_domain: str = "",
        frameworks: FrameworkOptions | None = None,
        gang_scheduler_name: str = "",
        metrics: Metrics | None = None,
        new_keys: Callable[[], objects.SshKeys] = new_key_pair,
    ) -> None:
        self._metrics = metrics
        self._mpi_metrics = MpiOperatorMetrics(metrics) if metrics is not None else None
        self._gang = scheduler_for(gang_scheduler_name)
        self._frameworks = frameworks or FrameworkOptions()
        self._client = client
        self._clock = clock
        self._recorder = recorder
        self._domain = cluster_domain
        self._new_keys = new_keys

    @staticmethod
    def handles(raw: Obj) -> bool:
        return api.is_v2beta1_job(raw)

    async def reconcile(self, raw: Obj) -> Result:
        job = api.parse(raw)
        namespace = job.metadata.namespace or ""
        observed = await self._observe(raw, job, namespace)
        keys = self._new_keys() if engine.needs_keys(observed) else None
        plan = engine.plan(
            job,
            observed,
            self._clock.now(),
            keys=keys,
            cluster_domain=self._domain,
            options=self._frameworks,
            gang=self._gang,
        )
        if not plan.skipped:
            for action in plan.actions:
                await self._apply(raw, action, namespace)
            launcher = observed.launcher is not None or any(
                isinstance(a, Create) and a.kind == "Job" for a in plan.actions
            )
            if launcher and self._mpi_metrics is not None:
                name = f"{job.metadata.name}-launcher"
                self._mpi_metrics.job_info.labels(launcher=name, namespace=namespace).set(1)
            await self._write_status(raw, job, plan.status)
        for event in plan.events:
            await self._record(raw, event)
        if plan.skipped or conditions.is_finished(tuple(plan.status.conditions or ())):
            return Result()
        return Result(requeue_after=POLL)

    async def _observe(self, raw: Obj, job: api.MPIJobV2Beta1, namespace: str) -> engine.Observed:
        name = job.metadata.name or ""
        found: dict[str, Any] = {}
        wanted = [
            ("launcher", LAUNCHER_JOBS, f"{name}-launcher"),
            ("service", SERVICES, name),
            ("config_map", CONFIGMAPS, f"{name}-config"),
            ("secret", SECRETS, f"{name}-ssh"),
        ]
        if self._gang is not None:
            groups = resource_for(api_version=self._gang.api_version, kind="PodGroup")
            wanted.append(("pod_group", groups, name))
        for field, resource, object_name in wanted:
            try:
                obj = await self._client.get(resource, name=object_name, namespace=namespace)
            except errors.NotFoundError:
                found[field] = None
                continue
            await self._check_owner(raw, obj, resource.kind)
            found[field] = obj
        base = f"{objects.OPERATOR_NAME_LABEL}={objects.OPERATOR_NAME},"
        base += f"{objects.JOB_NAME_LABEL}={name}"
        workers = await self._client.list(
            PODS, namespace=namespace, label_selector=f"{base},{objects.JOB_ROLE_LABEL}=worker"
        )
        for pod in workers.items:
            await self._check_owner(raw, pod, "Pod")
        launchers = await self._client.list(
            PODS, namespace=namespace, label_selector=f"{base},{objects.JOB_ROLE_LABEL}=launcher"
        )
        return engine.Observed(
            workers=tuple(workers.items), launcher_pods=tuple(launchers.items), **found
        )

    async def _check_owner(self, raw: Obj, obj: Obj, kind: str) -> None:
        refs = obj["metadata"].get("ownerReferences") or []
        owner = next((r for r in refs if r.get("controller")), None)
        if owner is not None and owner.get("uid") == raw["metadata"].get("uid"):
            return
        name = obj["metadata"]["name"]
        message = f'Resource "{name}" of Kind "{kind}" already exists and is not managed by MPIJob'
        await self._record(raw, Event("Warning", "ErrResourceExists", message))
        raise errors.ApiError(message, status=409)

    async def _apply(self, raw: Obj, action: Action, namespace: str) -> None:
        try:
            if isinstance(action, Create):
                resource = resource_for(api_version=action.body["apiVersion"], kind=action.kind)
                await self._client.create(resource, action.body, namespace=namespace)
            elif isinstance(action, Update):
                resource = resource_for(api_version=action.body["apiVersion"], kind=action.kind)
                await self._client.patch(
                    resource, name=action.name, namespace=namespace, patch=action.body
                )
            elif isinstance(action, Delete):
                resource = resource_for(api_version=action.api_version, kind=action.kind)
                await self._client.delete(resource, name=action.name, namespace=namespace)
        except (errors.AlreadyExistsError, errors.NotFoundError):
            return  # created by an earlier pass whose view was stale; deleting what is gone
        except errors.ApiError as exc:
            if isinstance(action, Create) and action.failed is not None:
                await self._record(raw, action.outcome_event(str(exc)))
            raise

    async def _write_status(self, raw: Obj, job: api.MPIJobV2Beta1, status: JobStatus) -> None:
        old = job.status or JobStatus()
        if status == old:
            return
        body = copy.deepcopy(raw)
        body["status"] = status.model_dump(mode="json", by_alias=True, exclude_none=True)
        await self._client.replace(
            job_resource(MPIJOB),
            body,
            namespace=raw["metadata"].get("namespace"),
            subresource="status",
        )
        namespace = str(raw["metadata"].get("namespace") or "")
        if self._metrics is not None:
            self._metrics.count_transitions(
                namespace=namespace, framework="mpi", old=old, new=status
            )
        if self._mpi_metrics is not None:
            self._mpi_metrics.count(old, status)

    async def _record(self, raw: Obj, event: Event) -> None:
        await self._recorder.record(raw, event, component=COMPONENT)


# Kinds with a second API version whose jobs another reconciler runs (docs/design/100).
VERSION_RECONCILERS: dict[str, Callable[..., V2Beta1Reconciler]] = {
    MPIJOB.kind: V2Beta1Reconciler,
}
# The operator-name label value of those jobs' children, by kind: their pods (the launcher
# Job's, too) queue the job they are labelled for.
VERSION_OPERATOR_NAMES: dict[str, str] = {objects.OPERATOR_NAME: MPIJOB.kind}
