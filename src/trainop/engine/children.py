"""The job's children in a running pass: PodGroup, extra objects, pods and Services.

Extra objects are the ones the plugin's capabilities need (``exec_access``, ``config_files``)
and its own ``extra_objects``; each carries the job's labels (and the plugin's ``name_label``).

Each ``sync_*`` compares what should exist with what was observed and appends the difference:
missing objects are created, changed PodGroups and extra objects updated, pods and Services of
indexes at or beyond ``replicas`` deleted (scale-down). Replicas are created in the plugin's
creation order, a gated type's only once its gate opened (``phases.may_create``). Bodies come
from ``desired`` (and ``gang.decorate`` under gang scheduling).
"""

from __future__ import annotations

from trainop.engine import config_files, desired, exec_access, gang, naming, phases
from trainop.engine.actions import Create, Delete, Event, Update, Wire
from trainop.engine.draft import Draft, delete_pod
from trainop.engine.observed import name_of
from trainop.frameworks.base import Peers, Replica, replicas_of
from trainop.frameworks.options import FrameworkOptions
from trainop.frameworks.topology import Topology


def sync_pod_group(draft: Draft, scheduler: gang.GangScheduler, options: FrameworkOptions) -> bool:
    """Create or update the PodGroup; False while Volcano has not admitted it."""
    current = draft.observed.pod_group
    later = phases.held_back(draft.framework, options)  # cannot exist yet: never in the gang
    wanted = gang.pod_group(draft.job, scheduler, current, left_out=later)
    wanted["metadata"]["labels"] = naming.job_labels(draft.job, draft.framework)
    if current is None:
        draft.actions.append(Create(wanted))
    elif current.get("spec") != wanted["spec"]:
        draft.actions.append(Update(wanted))
    return gang.is_admitted(scheduler, current)


def _differs(current: object, wanted: Wire) -> bool:
    if not isinstance(current, dict):
        return True
    skip = ("metadata", "status", "apiVersion", "kind")
    return any(current.get(key) != value for key, value in wanted.items() if key not in skip)


def _peers(draft: Draft) -> Peers:
    live = [pod for pod in draft.pods if not pod.terminating]
    return Peers(
        running=frozenset(pod.name for pod in live if pod.phase == "Running"),
        ips={pod.name: pod.ip for pod in live if pod.ip},
    )


def _extra_objects(
    draft: Draft, topology: Topology, options: FrameworkOptions
) -> list[tuple[Wire, bool]]:
    """Each extra object and whether one that exists is used as it is: the ``exec_access``
    accounts, the ``config_files`` ConfigMap, the accounts' Roles and RoleBindings (upstream's
    order), then the plugin's ``extra_objects``. An access whose source type the job lacks
    (DGL's partitioner under ``partitionMode: Skip``) has no objects."""
    job, framework = draft.job, draft.framework
    files, rule = framework.config_files, framework.extra_objects
    accesses = [a for a in framework.exec_access if a.source in job.spec.replica_specs]
    peers = _peers(draft)
    found: list[tuple[Wire, bool]] = []
    found += [(exec_access.service_account(job, access), True) for access in accesses]
    if files is not None:
        config = config_files.of_job(job, files, peers=peers, topology=topology, options=options)
        found.append((config, False))
    unindexed = framework.unindexed_types
    found += [
        (obj, False)
        for access in accesses
        for obj in exec_access.rbac(job, access, unindexed=unindexed)
    ]
    if rule is not None:
        found += [
            (obj, False) for obj in rule(job=job, running_pods=peers.running, options=options)
        ]
    return found


def sync_extra_objects(draft: Draft, topology: Topology, options: FrameworkOptions) -> None:
    """Create the extra objects that are missing, update those that differ."""
    current = {(str(o.get("kind")), name_of(o)): o for o in draft.observed.objects}
    labels = naming.job_labels(draft.job, draft.framework)
    if draft.framework.name_label is not None:
        labels = {draft.framework.name_label: draft.job.metadata.name or "", **labels}
    for obj, reuse in _extra_objects(draft, topology, options):
        meta = obj.get("metadata") or {}
        extra = {key: value for key, value in meta.items() if key != "name"}
        extra["labels"] = {**(meta.get("labels") or {}), **labels}
        body = {**obj, "metadata": naming.owned_metadata(draft.job, meta["name"], **extra)}
        found = current.get((str(obj["kind"]), meta["name"]))
        if found is None:
            draft.actions.append(Create(body, reuse_existing=reuse))
        elif _differs(found, body):
            draft.actions.append(Update(body))


def _replicas(draft: Draft) -> list[Replica]:
    """Every replica the job should have, in the plugin's creation order."""
    specs, framework = draft.job.spec.replica_specs, draft.framework
    order = [rt for rt in framework.creation_order or framework.info.replica_types if rt in specs]
    order += [rt for rt in specs if rt not in order]
    return [
        Replica(rt, None) if rt in framework.unindexed_types else Replica(rt, index)
        for rt in order
        for index in range(replicas_of(draft.job, rt) if rt not in framework.unindexed_types else 1)
    ]


def sync_pods(
    draft: Draft,
    topology: Topology,
    options: FrameworkOptions,
    scheduler: gang.GangScheduler | None,
) -> None:
    """Create the pods of replicas without any pod; delete pods beyond ``replicas``."""
    wanted = _replicas(draft)
    present = {pod.replica for pod in draft.pods}
    for pod in draft.pods:
        if pod.replica not in wanted:
            delete_pod(draft, pod)
    for replica in wanted:
        if replica in present or not _may_create(draft, replica, options):
            continue
        body, warnings = desired.pod(
            job=draft.job, framework=draft.framework, replica=replica,
            topology=topology, options=options,
        )  # fmt: skip
        if scheduler is not None:
            body, more = gang.decorate(draft.job, replica, body, scheduler)
            wording = draft.framework.pod_wording.get(replica.type)
            if wording is not None:
                more = tuple(Event(e.type, wording.scheduler_name_warning, e.message) for e in more)
            warnings += more
        draft.actions.append(_pod_create(draft, replica, body))
        draft.events += warnings


def _may_create(draft: Draft, replica: Replica, options: FrameworkOptions) -> bool:
    return phases.may_create(draft.job, draft.framework, draft.pods, replica.type, options=options)


def _pod_create(draft: Draft, replica: Replica, body: Wire) -> Create:
    """The pod's Create, with the kind's own wording of its events (MPI) if it has one."""
    wording = draft.framework.pod_wording.get(replica.type)
    if wording is None:
        return Create(body)
    reason, message = wording.created
    created = Event("Normal", reason, message.format(name=body["metadata"]["name"]))
    return Create(body, created=created, failed=wording.create_failed)


def sync_services(draft: Draft, options: FrameworkOptions) -> None:
    """One headless Service per replica (of the plugin's ``service_types``, if it names
    any); Services of replicas beyond ``replicas`` deleted."""
    framework = draft.framework
    if not framework.creates_services:
        return
    wanted = {
        naming.pod_name(draft.job, replica): replica
        for replica in _replicas(draft)
        if not framework.service_types or replica.type in framework.service_types
    }
    present = {name_of(service) for service in draft.observed.services}
    for name in sorted(present - set(wanted)):
        if not draft.actions.count(Delete("v1", "Service", name)):
            draft.actions.append(Delete("v1", "Service", name))
    for name, replica in wanted.items():
        if name not in present and _may_create(draft, replica, options):
            body = desired.service(job=draft.job, framework=draft.framework, replica=replica)
            draft.actions.append(Create(body))
