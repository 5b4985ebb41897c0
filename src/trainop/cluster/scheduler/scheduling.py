"""What the local scheduler decides, as pure functions: fitting, gangs, PodGroup status.

``decide`` takes the node's allocatable resources, every pod and every PodGroup it knows, and
returns which pending pods to bind, which stay ``Pending`` with what ``Unschedulable``
message, and the status each PodGroup should have. No I/O, no clock reads: the driver
(``cluster.scheduler.scheduler``) applies the decision. See docs/design/090-local-scheduler.md.

Fitting is kube-scheduler's ``NodeResourcesFit`` for one node: a pod's request is the sum of
its containers' requests (a resource with only a limit requests its limit, as the API server
defaults it), or the largest init container's when that is more, plus ``overhead``; it fits
when, for every resource the node has, it is no more than allocatable minus the requests of
the pods bound and not finished. An extended resource (``vendor.com/name``) the node does not
have never fits, except ``nvidia.com/gpu`` on a machine with no GPU and none declared
(``--gpus``): there the process kubelet runs GPU manifests on the CPU, so they are not held
back. A pod that does not fit gets kube-scheduler's message,
``0/1 nodes are available: 1 Insufficient cpu.``. A pod whose PersistentVolumeClaims cannot
be used yet waits with the message ``volumebinding`` gives.

Gangs: a pod is a member of a PodGroup through Volcano's annotation
``scheduling.k8s.io/group-name`` or the coscheduler's label ``scheduling.x-k8s.io/pod-group``.
Until ``minMember`` members are bound, pending members are bound only all together, when at
least as many as are missing fit at once; after that, members are fitted one by one. A
Volcano PodGroup is admitted (``Inqueue``) once its ``minResources``, less what its bound
members already hold, fit in what neither bound pods nor other admitted groups hold — the
operator creates a Volcano job's pods only then.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from trainop.cluster.scheduler import volumebinding
from trainop.engine import quantities

Obj = Mapping[str, Any]
Resources = dict[str, Decimal]
PodKey = tuple[str, str]  # namespace, name
GroupKey = tuple[str, str, str]  # flavour, namespace, name

CPU, MEMORY, GPU, PODS = "cpu", "memory", "nvidia.com/gpu", "pods"
VOLCANO, COSCHEDULING = "volcano", "coscheduling"
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
COSCHEDULING_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
DEFAULT_MAX_PODS = 110
_TERMINAL = ("Succeeded", "Failed")
_GROUP_DONE = ("Completed", "Finished", "Failed")


@dataclass(frozen=True, slots=True)
class Allocatable:
    """What the local node offers to pods."""

    cpu: Decimal
    memory: Decimal
    gpus: int | None  # None: no GPUs and none declared, so GPU requests are not fitted
    max_pods: int = DEFAULT_MAX_PODS

    def resources(self) -> Resources:
        offered = {CPU: self.cpu, MEMORY: self.memory, PODS: Decimal(self.max_pods)}
        if self.gpus is not None:
            offered[GPU] = Decimal(self.gpus)
        return offered


@dataclass(slots=True)
class Decision:
    """The outcome of one scheduling pass."""

    bind: list[PodKey] = field(default_factory=list)
    unschedulable: dict[PodKey, str] = field(default_factory=dict)
    groups: dict[GroupKey, dict[str, Any]] = field(default_factory=dict)
    admitted: set[GroupKey] = field(default_factory=set)  # Volcano groups enqueued this pass


def _add(total: Resources, more: Mapping[str, Decimal]) -> None:
    for name, amount in more.items():
        total[name] = total.get(name, Decimal(0)) + amount


def container_requests(container: Obj) -> Resources:
    """A container's requests; a resource with a limit and no request requests its limit."""
    resources = container.get("resources") or {}
    wanted = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {str(k): quantities.parse(v).amount for k, v in wanted.items()}


def pod_requests(pod: Obj) -> Resources:
    """What a pod asks of its node (see the module docstring); always one ``pods`` slot."""
    spec = pod.get("spec") or {}
    total: Resources = {}
    for container in spec.get("containers") or []:
        _add(total, container_requests(container))
    for container in spec.get("initContainers") or []:
        for name, amount in container_requests(container).items():
            total[name] = max(total.get(name, Decimal(0)), amount)
    _add(
        total, {str(k): quantities.parse(v).amount for k, v in (spec.get("overhead") or {}).items()}
    )
    total[PODS] = Decimal(1)
    return total


def insufficient(request: Mapping[str, Decimal], free: Mapping[str, Decimal]) -> list[str]:
    """The resources ``request`` needs more of than ``free`` holds, sorted."""
    short: list[str] = []
    for name, amount in request.items():
        if amount <= 0 or (name == GPU and name not in free):
            continue
        if name in free:
            if amount > free[name]:
                short.append(name)
        elif "/" in name and not name.startswith(("kubernetes.io/", "hugepages-")):
            short.append(name)  # an extended resource this node does not have
    return sorted(short)


def unschedulable_message(short: Iterable[str]) -> str:
    """kube-scheduler's FitError text for one node."""
    reasons = sorted("1 Too many pods" if r == PODS else f"1 Insufficient {r}" for r in short)
    return f"0/1 nodes are available: {', '.join(reasons)}."


def group_of(pod: Obj) -> GroupKey | None:
    """The PodGroup a pod belongs to, if any."""
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    volcano = (meta.get("annotations") or {}).get(VOLCANO_GROUP_ANNOTATION)
    if volcano:
        return (VOLCANO, namespace, str(volcano))
    cosched = (meta.get("labels") or {}).get(COSCHEDULING_GROUP_LABEL)
    if cosched:
        return (COSCHEDULING, namespace, str(cosched))
    return None


def _key(obj: Obj) -> PodKey:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or "default"), str(meta.get("name") or ""))


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def is_bound(pod: Obj) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def holds_resources(pod: Obj) -> bool:
    """Bound and not finished: its requests count against the node."""
    return is_bound(pod) and _phase(pod) not in _TERMINAL


def is_pending(pod: Obj) -> bool:
    """Waiting for a node: unbound, not finished, not being deleted."""
    meta = pod.get("metadata") or {}
    return not is_bound(pod) and _phase(pod) not in _TERMINAL and not meta.get("deletionTimestamp")


def _order(pod: Obj) -> tuple[int, str, str, str]:
    meta = pod.get("metadata") or {}
    priority = int((pod.get("spec") or {}).get("priority") or 0)
    namespace, name = _key(pod)
    return (-priority, str(meta.get("creationTimestamp") or ""), namespace, name)


def decide(
    allocatable: Allocatable,
    pods: Iterable[Obj],
    groups: Mapping[GroupKey, Obj],
    claims: Mapping[PodKey, Obj] | None = None,
) -> Decision:
    """One scheduling pass over everything known (see the module docstring); with ``claims``
    (every PersistentVolumeClaim by namespace and name) a pod waits until its claims can be
    used (``volumebinding``)."""
    all_pods = list(pods)
    decision = Decision()
    if claims is not None:
        waiting = sorted((p for p in all_pods if is_pending(p)), key=_order)
        decision.unschedulable.update(volumebinding.problems(waiting, all_pods, claims))
    free = allocatable.resources()
    for pod in all_pods:
        if holds_resources(pod):
            _add(free, {k: -v for k, v in pod_requests(pod).items()})
    members: dict[GroupKey, list[Obj]] = {}
    held_back = set(decision.unschedulable)
    for pod in all_pods:
        group = group_of(pod)
        if group is not None and _key(pod) not in held_back:
            members.setdefault(group, []).append(pod)
    done: set[GroupKey] = set()
    pending = (p for p in all_pods if is_pending(p) and _key(p) not in held_back)
    for pod in sorted(pending, key=_order):
        group = group_of(pod)
        if group is None:
            _fit_one(pod, free, decision)
        elif group not in done:
            done.add(group)
            _fit_gang(group, groups.get(group), members[group], free, decision)
    _admit_volcano_groups(groups, members, free, decision)
    for key, group_obj in groups.items():
        status = group_status(key[0], group_obj, members.get(key, []), decision)
        if status != (group_obj.get("status") or {}):
            decision.groups[key] = status
    return decision


def _fit_one(pod: Obj, free: Resources, decision: Decision) -> None:
    request = pod_requests(pod)
    short = insufficient(request, free)
    if short:
        decision.unschedulable[_key(pod)] = unschedulable_message(short)
        return
    _add(free, {k: -v for k, v in request.items()})
    decision.bind.append(_key(pod))


def min_member(group: Obj) -> int:
    return max(int((group.get("spec") or {}).get("minMember") or 1), 1)


def _fit_gang(
    key: GroupKey, group: Obj | None, pods: list[Obj], free: Resources, decision: Decision
) -> None:
    pending = sorted((p for p in pods if is_pending(p)), key=_order)
    if group is None:
        kind = (
            "podgroups.scheduling.volcano.sh"
            if key[0] == VOLCANO
            else "podgroups.scheduling.x-k8s.io"
        )
        for pod in pending:
            decision.unschedulable[_key(pod)] = f'{kind} "{key[2]}" not found'
        return
    waiting = (group.get("status") or {}).get("phase") in (None, "", "Pending")
    # Volcano binds nothing of a group it has not admitted yet (enqueue comes first).
    if key[0] == VOLCANO and waiting and not _volcano_fits(group, pods, free):
        for pod in pending:
            decision.unschedulable[_key(pod)] = _gang_message(group, pods, pending)
        return
    wanted = min_member(group)
    placed = sum(1 for p in pods if holds_resources(p) or _phase(p) == "Succeeded")
    missing = wanted - placed
    if missing <= 0:
        for pod in pending:
            _fit_one(pod, free, decision)
        return
    trial = dict(free)
    fitting: list[Obj] = []
    for pod in pending:
        request = pod_requests(pod)
        if not insufficient(request, trial):
            _add(trial, {k: -v for k, v in request.items()})
            fitting.append(pod)
    if len(fitting) < missing:
        for pod in pending:
            decision.unschedulable[_key(pod)] = _gang_message(group, pods, pending)
        return
    free.clear()
    free.update(trial)
    decision.bind.extend(_key(p) for p in fitting)
    for pod in pending:
        if pod not in fitting:
            _fit_short(pod, trial, decision)


def _fit_short(pod: Obj, free: Resources, decision: Decision) -> None:
    decision.unschedulable[_key(pod)] = unschedulable_message(insufficient(pod_requests(pod), free))


def _gang_message(group: Obj, pods: list[Obj], pending: list[Obj]) -> str:
    """Why a gang waits, in the words Volcano's gang plugin uses."""
    wanted = min_member(group)
    return (
        f"{len(pending)}/{len(pods)} tasks in gang unschedulable: pod group is not ready, "
        f"{len(pending)} Pending, {wanted} minAvailable"
    )


def _min_resources(group: Obj) -> Resources:
    wanted = (group.get("spec") or {}).get("minResources") or {}
    return {str(k): quantities.parse(v).amount for k, v in wanted.items()}


def _volcano_fits(group: Obj, pods: list[Obj], free: Mapping[str, Decimal]) -> bool:
    """Whether a Volcano group's ``minResources``, less what its members hold, fit."""
    need = _min_resources(group)
    for pod in pods:
        if holds_resources(pod):
            for name, amount in pod_requests(pod).items():
                if name in need:
                    need[name] = max(need[name] - amount, Decimal(0))
    return not insufficient(need, free)


def _admit_volcano_groups(
    groups: Mapping[GroupKey, Obj],
    members: Mapping[GroupKey, list[Obj]],
    free: Resources,
    decision: Decision,
) -> None:
    """Volcano's enqueue: admit waiting groups in creation order while their resources fit;
    an admitted group whose pods do not exist yet reserves its ``minResources``."""
    reserve = dict(free)
    for key, group in sorted(groups.items(), key=lambda kv: _order(kv[1])):
        if key[0] != VOLCANO:
            continue
        pods = members.get(key, [])
        phase = (group.get("status") or {}).get("phase") or "Pending"
        placed = any(holds_resources(p) for p in pods) or any(
            _key(p) in decision.bind for p in pods
        )
        if phase == "Inqueue" and not placed:
            _add(reserve, {k: -v for k, v in _min_resources(group).items()})
        elif (
            phase == "Pending"
            and not _is_running(group, pods, decision)
            and _volcano_fits(group, pods, reserve)
        ):
            _add(reserve, {k: -v for k, v in _min_resources(group).items()})
            decision.admitted.add(key)


def _is_running(group: Obj, pods: list[Obj], decision: Decision) -> bool:
    bound = sum(1 for p in pods if holds_resources(p) or _key(p) in decision.bind)
    return bound >= min_member(group)


def group_status(flavour: str, group: Obj, pods: list[Obj], decision: Decision) -> dict[str, Any]:
    """The PodGroup status after this pass, as Volcano or the coscheduler would write it."""
    current = dict(group.get("status") or {})
    key = (flavour, *_key(group))
    admitted = key in decision.admitted
    wanted = min_member(group)
    phases = [_phase(p) for p in pods]
    running = phases.count("Running")
    succeeded = phases.count("Succeeded")
    failed = phases.count("Failed")
    bound = sum(1 for p in pods if holds_resources(p) or _key(p) in decision.bind)
    previous = current.get("phase") or "Pending"
    active = [p for p in phases if p not in _TERMINAL]
    if previous in _GROUP_DONE and not active:
        return current  # finished groups stay so when their pods are cleaned up
    status: dict[str, Any] = {}
    if flavour == VOLCANO:
        if pods and all(p in _TERMINAL for p in phases) and succeeded >= wanted:
            phase = "Completed"
        elif bound >= wanted:
            phase = "Running"
        elif admitted or previous in ("Inqueue", "Running"):
            phase = "Inqueue"
        else:
            phase = "Pending"
        status["phase"] = phase
        for name, count in (("running", running), ("succeeded", succeeded), ("failed", failed)):
            if count:
                status[name] = count
        if "conditions" in current:
            status["conditions"] = current["conditions"]
        return status
    if pods and all(p in _TERMINAL for p in phases) and succeeded >= wanted:
        phase = "Finished"
    elif failed and failed + running + succeeded >= wanted:
        phase = "Failed"
    elif running + succeeded >= wanted:
        phase = "Running"
    elif bound + succeeded >= wanted:
        phase = "Scheduled"
    elif len(pods) >= wanted:
        phase = "PreScheduling"
    else:
        phase = "Pending"
    status["phase"] = phase
    for name, count in (
        ("scheduled", bound + succeeded + failed),
        ("running", running),
        ("succeeded", succeeded),
        ("failed", failed),
    ):
        if count:
            status[name] = count
    if "scheduleStartTime" in current:
        status["scheduleStartTime"] = current["scheduleStartTime"]
    return status
