"""Reconcile MPIJobs with v2beta1 semantics: read → ``engine.mpi_v2beta1.plan`` → apply → status.

The MPIJob kind's ``JobReconciler`` hands every job with v2beta1 semantics
(``api.mpi_v2beta1.is_v2beta1_job``; docs/design/100) to this reconciler, keyed by kind in
``VERSION_RECONCILERS``. What it reads it reads from the manager's informers
(``V2Beta1Caches``), never from the API: the Service, ConfigMap, Secret and launcher Job by
name (they carry only ``app: <job>``, as mpi-operator's, so their informers select on the
``app`` label and objects mpi-operator made are found too), the PodGroup by name, and the pods
through an index on their ``operator-name``/``job-name``/``job-role`` labels. Events of those
objects queue the owning MPIJob (launcher Job status changes included), so nothing polls. An
object with one of the job's names that another controller owns is never used: Warning
``ErrResourceExists`` and a retry (spec 5.4). Events carry the component
``mpi-job-controller``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import Counter, Gauge

from trainop import errors
from trainop.api import mpi_v2beta1 as api
from trainop.api.kinds import MPIJOB
from trainop.api.types import JobStatus
from trainop.controller.metrics import Metrics
from trainop.controller.reconciler import Result, replace_status, send_child_action
from trainop.controller.sshkeys import new_key_pair
from trainop.engine import mpi_v2beta1 as engine
from trainop.engine.actions import Action, Create, Delete, Event, Update
from trainop.engine.gang import scheduler_for
from trainop.frameworks import mpi_v2beta1 as objects
from trainop.frameworks.options import FrameworkOptions
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.events import EventRecorder, ObjectRef, Source
from trainop.kube.informer import Informer
from trainop.kube.resources import job_resource, resource_for

COMPONENT = "mpi-job-controller"
LAUNCHER_JOBS = resource_for(api_version="batch/v1", kind="Job")
# mpi-operator's Service, ConfigMap, Secret and launcher Job carry only ``app: <job>``: their
# informers select on that label existing.
APP_SELECTOR = "app"
POD_INDEX = "mpi-v2beta1"


def pod_keys(obj: Obj) -> list[str]:
    """``<namespace>/<job>/<role>`` of a pod labelled for a v2beta1 job (workers and the
    launcher Job's pods), as the index of ``V2Beta1Caches.pods``."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    job = labels.get(objects.JOB_NAME_LABEL)
    if labels.get(objects.OPERATOR_NAME_LABEL) != objects.OPERATOR_NAME or not job:
        return []
    return [f"{meta.get('namespace', '')}/{job}/{labels.get(objects.JOB_ROLE_LABEL, '')}"]


class V2Beta1Caches:
    """The informers a v2beta1 job is read from (docs/design/100).

    ``pods`` is the manager's pod informer (shared with v1: every v2beta1 pod carries the
    ``job-name`` label it selects on); the others are this reader's own: launcher Jobs,
    Services, ConfigMaps and Secrets selected on ``app``, PodGroups of the gang scheduler
    (mpi-operator's carry no label at all, so unselected; there are few).
    """

    def __init__(
        self,
        *,
        pods: Informer,
        launcher_jobs: Informer,
        services: Informer,
        config_maps: Informer,
        secrets: Informer,
        pod_groups: Informer | None = None,
    ) -> None:
        self.pods = pods
        self.by_field = {
            "launcher": launcher_jobs,
            "service": services,
            "config_map": config_maps,
            "secret": secrets,
        }
        if pod_groups is not None:
            self.by_field["pod_group"] = pod_groups
        pods.add_index(POD_INDEX, pod_keys)

    def informers(self) -> list[Informer]:
        """The informers of these caches besides the shared pod informer."""
        return list(self.by_field.values())

    def get(self, field: str, namespace: str, name: str) -> Obj | None:
        informer = self.by_field.get(field)
        return None if informer is None else informer.get(namespace, name)

    def job_pods(self, namespace: str, job: str, role: str) -> list[Obj]:
        return self.pods.by_index(POD_INDEX, f"{namespace}/{job}/{role}")


def informer_resources(gang_scheduler_name: str) -> dict[str, Any]:
    """The resource of each of ``V2Beta1Caches``' own informers (``pod_groups`` only with a
    gang scheduler)."""
    wanted: dict[str, Any] = {
        "launcher_jobs": LAUNCHER_JOBS,
        "services": resource_for(api_version="v1", kind="Service"),
        "config_maps": resource_for(api_version="v1", kind="ConfigMap"),
        "secrets": resource_for(api_version="v1", kind="Secret"),
    }
    gang = scheduler_for(gang_scheduler_name)
    if gang is not None:
        wanted["pod_groups"] = resource_for(api_version=gang.api_version, kind="PodGroup")
    return wanted


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
        caches: V2Beta1Caches,
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
        self._caches = caches
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
        # No timer of its own: deadlines, retries and TTL are the launcher Job's, and every
        # change of what the plan reads queues the job (manager, V2Beta1Caches).
        return Result()

    async def _observe(self, raw: Obj, job: api.MPIJobV2Beta1, namespace: str) -> engine.Observed:
        name = job.metadata.name or ""
        found: dict[str, Any] = {}
        wanted = [
            ("launcher", "Job", f"{name}-launcher"),
            ("service", "Service", name),
            ("config_map", "ConfigMap", f"{name}-config"),
            ("secret", "Secret", f"{name}-ssh"),
        ]
        if self._gang is not None:
            wanted.append(("pod_group", "PodGroup", name))
        for field, kind, object_name in wanted:
            obj = self._caches.get(field, namespace, object_name)
            if obj is not None:
                await self._check_owner(raw, obj, kind)
            found[field] = obj
        workers = self._caches.job_pods(namespace, name, "worker")
        for pod in workers:
            await self._check_owner(raw, pod, "Pod")
        launchers = self._caches.job_pods(namespace, name, "launcher")
        return engine.Observed(workers=tuple(workers), launcher_pods=tuple(launchers), **found)

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
            if isinstance(action, Create | Update | Delete):  # the engine plans no DeleteJob
                await send_child_action(self._client, action, namespace)
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
        await replace_status(self._client, job_resource(MPIJOB), raw, status)
        namespace = str(raw["metadata"].get("namespace") or "")
        if self._metrics is not None:
            self._metrics.count_transitions(
                namespace=namespace, framework="mpi", old=old, new=status
            )
        if self._mpi_metrics is not None:
            self._mpi_metrics.count(old, status)

    async def _record(self, raw: Obj, event: Event) -> None:
        about, source = ObjectRef.of(raw), Source(COMPONENT)
        await self._recorder.record(about, event.type, event.reason, event.message, source=source)


# Kinds with a second API version whose jobs another reconciler runs (docs/design/100).
VERSION_RECONCILERS: dict[str, Callable[..., V2Beta1Reconciler]] = {
    MPIJOB.kind: V2Beta1Reconciler,
}
# The operator-name label value of those jobs' children, by kind: their pods (the launcher
# Job's, too) queue the job they are labelled for.
VERSION_OPERATOR_NAMES: dict[str, str] = {objects.OPERATOR_NAME: MPIJOB.kind}
