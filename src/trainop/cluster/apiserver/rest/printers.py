"""kube-apiserver's printed columns for the built-in kinds a training user lists.

Each printer is a list of column definitions (``name``, ``type``, ``format``, ``priority``,
``description``; priority 1 columns appear only under ``kubectl get -o wide``) and a function
from an object and the current time to its row's cells. The cells are what kube's printers
compute (pod STATUS from the container states, READY as ready/total, RESTARTS with the time of
the last restart, services' PORT(S), AGE as kube's human duration); ``tables`` assembles them
into a ``Table``. Kinds without a printer here get NAME and AGE.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

Cells = list[Any]
RowFunction = Callable[[dict[str, Any], datetime], Cells]
Column = dict[str, Any]
NONE = "<none>"


def column(name: str, description: str, *, kind: str = "string", priority: int = 0) -> Column:
    """One column definition, as ``meta.k8s.io`` ``TableColumnDefinition`` spells it."""
    out: Column = {"name": name, "type": kind, "format": "", "description": description}
    out["priority"] = priority
    if name == "Name":
        out["format"] = "name"
    return out


NAME = column("Name", "Name must be unique within a namespace.")
AGE = column("Age", "The time since the object was created.")


def parse_time(text: object) -> datetime | None:
    """An RFC 3339 timestamp, or None."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """kube's short human duration (``5s``, ``3m20s``, ``5h``, ``2d3h``, ``1y20d``)."""
    if seconds < -1:
        return "<invalid>"
    s = max(int(seconds), 0)
    minutes, hours, days = s // 60, s // 3600, s // 86400
    steps: list[tuple[bool, str]] = [
        (s < 120, f"{s}s"),
        (minutes < 10, f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"),
        (minutes < 180, f"{minutes}m"),
        (hours < 8, f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"),
        (hours < 48, f"{hours}h"),
        (hours < 192, f"{days}d" if hours % 24 == 0 else f"{days}d{hours % 24}h"),
        (days < 730, f"{days}d"),
        (days < 2920, f"{days // 365}y" if days % 365 == 0 else f"{days // 365}y{days % 365}d"),
    ]
    return next((text for done, text in steps if done), f"{days // 365}y")


def since(text: object, now: datetime) -> str:
    """The age of a timestamp, or ``<unknown>`` without one."""
    moment = parse_time(text)
    return "<unknown>" if moment is None else human_duration((now - moment).total_seconds())


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def age(obj: dict[str, Any], now: datetime) -> str:
    """The AGE cell."""
    return since(_meta(obj).get("creationTimestamp"), now)


def _default_row(obj: dict[str, Any], now: datetime) -> Cells:
    return [_meta(obj).get("name", ""), age(obj, now)]


DEFAULT: tuple[list[Column], RowFunction] = ([NAME, AGE], _default_row)


# ---- pods --------------------------------------------------------------------------------


def _pod_reason(obj: dict[str, Any]) -> tuple[str, int, bool]:
    """STATUS, the number of ready containers, and whether one runs."""
    status = obj.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    init = _init_reason(status, len((obj.get("spec") or {}).get("initContainers") or []))
    if init:
        return init, 0, False
    ready, running = 0, False
    for cs in reversed(status.get("containerStatuses") or []):
        state = cs.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated is not None:
            reason = terminated.get("reason") or _exit_text(terminated)
        elif state.get("running") is not None and cs.get("ready"):
            running, ready = True, ready + 1
    if reason == "Completed" and running:
        reason = "Running" if _condition(status, "Ready") else "NotReady"
    if _meta(obj).get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    return reason, ready, running


def _exit_text(terminated: dict[str, Any]) -> str:
    if terminated.get("signal"):
        return f"Signal:{terminated['signal']}"
    return f"ExitCode:{terminated.get('exitCode', 0)}"


def _init_reason(status: dict[str, Any], count: int) -> str:
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        state = cs.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        if terminated is not None and terminated.get("exitCode") == 0:
            continue
        if terminated is not None:
            return "Init:" + (terminated.get("reason") or _exit_text(terminated))
        if waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            return f"Init:{waiting['reason']}"
        return f"Init:{i}/{count}"
    return ""


def _condition(status: dict[str, Any], kind: str) -> bool:
    return any(
        c.get("type") == kind and c.get("status") == "True" for c in status.get("conditions") or []
    )


def _restarts(status: dict[str, Any], now: datetime) -> str:
    statuses = status.get("containerStatuses") or []
    count = sum(int(cs.get("restartCount") or 0) for cs in statuses)
    finished = [
        parse_time(((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt"))
        for cs in statuses
    ]
    last = max((f for f in finished if f is not None), default=None)
    if last is None:
        return str(count)
    return f"{count} ({human_duration((now - last).total_seconds())} ago)"


def _pod_row(obj: dict[str, Any], now: datetime) -> Cells:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    reason, ready, _ = _pod_reason(obj)
    gates = spec.get("readinessGates") or []
    gate_types = {g.get("conditionType") for g in gates}
    gates_ready = sum(
        1
        for c in status.get("conditions") or []
        if c.get("type") in gate_types and c.get("status") == "True"
    )
    return [
        _meta(obj).get("name", ""),
        f"{ready}/{len(spec.get('containers') or [])}",
        reason,
        _restarts(status, now),
        age(obj, now),
        status.get("podIP") or NONE,
        spec.get("nodeName") or NONE,
        status.get("nominatedNodeName") or NONE,
        f"{gates_ready}/{len(gates)}" if gates else NONE,
    ]


POD_COLUMNS = [
    NAME,
    column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
    column("Status", "The aggregate status of the containers in this pod."),
    column("Restarts", "The number of times the containers in this pod have been restarted."),
    AGE,
    column("IP", "IP address allocated to the pod.", priority=1),
    column("Node", "Name of the node the pod is bound to.", priority=1),
    column("Nominated Node", "Node the scheduler nominated for the pod.", priority=1),
    column("Readiness Gates", "The pod's readiness gates that are met.", priority=1),
]


def pod_completed(obj: dict[str, Any]) -> bool:
    """Whether the pod has finished (kube marks such rows with a Completed condition)."""
    return (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")


# ---- services, events, namespaces, configmaps, secrets ---------------------------------


def _ports(spec: dict[str, Any]) -> str:
    parts = []
    for port in spec.get("ports") or []:
        node = f":{port['nodePort']}" if port.get("nodePort") else ""
        parts.append(f"{port.get('port')}{node}/{port.get('protocol') or 'TCP'}")
    return ",".join(parts) or NONE


def _service_row(obj: dict[str, Any], now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    kind = spec.get("type") or "ClusterIP"
    external = ",".join(spec.get("externalIPs") or [])
    if kind == "ExternalName":
        external = spec.get("externalName") or external
    selector = spec.get("selector") or {}
    return [
        _meta(obj).get("name", ""),
        kind,
        (spec.get("clusterIPs") or [spec.get("clusterIP") or NONE])[0],
        external or NONE,
        _ports(spec),
        age(obj, now),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or NONE,
    ]


SERVICE_COLUMNS = [
    NAME,
    column("Type", "The type of the service."),
    column("Cluster-IP", "The IP address of the service."),
    column("External-IP", "The external IP addresses of the service."),
    column("Port(s)", "The ports the service exposes."),
    AGE,
    column("Selector", "The labels of the pods the service routes to.", priority=1),
]


def _event_row(obj: dict[str, Any], now: datetime) -> Cells:
    involved = obj.get("involvedObject") or {}
    source = obj.get("source") or {}
    last = obj.get("lastTimestamp") or obj.get("eventTime") or obj.get("firstTimestamp")
    first = obj.get("firstTimestamp") or obj.get("eventTime")
    origin = ", ".join(v for v in (source.get("component"), source.get("host")) if v)
    return [
        since(last, now),
        obj.get("type", ""),
        obj.get("reason", ""),
        f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
        involved.get("fieldPath", ""),
        origin or obj.get("reportingComponent", ""),
        str(obj.get("message", "")).strip(),
        since(first, now),
        str(obj.get("count") or 1),
        _meta(obj).get("name", ""),
    ]


EVENT_COLUMNS = [
    column("Last Seen", "When the event was last seen."),
    column("Type", "The type of the event (Normal, Warning)."),
    column("Reason", "Why the event happened."),
    column("Object", "The object the event is about."),
    column("Subobject", "The part of the object the event is about.", priority=1),
    column("Source", "The component that reported the event.", priority=1),
    column("Message", "What happened."),
    column("First Seen", "When the event was first seen.", priority=1),
    column("Count", "How many times the event happened.", priority=1),
    column("Name", "The event's name.", priority=1),
]


def _namespace_row(obj: dict[str, Any], now: datetime) -> Cells:
    phase = (obj.get("status") or {}).get("phase") or "Active"
    return [_meta(obj).get("name", ""), phase, age(obj, now)]


def _configmap_row(obj: dict[str, Any], now: datetime) -> Cells:
    count = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [_meta(obj).get("name", ""), count, age(obj, now)]


def _secret_row(obj: dict[str, Any], now: datetime) -> Cells:
    count = len(obj.get("data") or {})
    return [_meta(obj).get("name", ""), obj.get("type") or "Opaque", count, age(obj, now)]


DATA = column("Data", "The number of data entries.", kind="integer")


def _node_row(obj: dict[str, Any], now: datetime) -> Cells:
    status, spec = obj.get("status") or {}, obj.get("spec") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    state = "Unknown"  # kube: Ready when True, NotReady otherwise, Unknown without one
    if ready is not None:
        state = "Ready" if ready.get("status") == "True" else "NotReady"
    if spec.get("unschedulable"):
        state += ",SchedulingDisabled"
    prefix = "node-role.kubernetes.io/"
    labels = _meta(obj).get("labels") or {}
    roles = sorted(k[len(prefix) :] for k in labels if k.startswith(prefix)) or [NONE]
    info = status.get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    return [
        _meta(obj).get("name", ""),
        state,
        ",".join(roles),
        age(obj, now),
        info.get("kubeletVersion", ""),
        addresses.get("InternalIP") or NONE,
        addresses.get("ExternalIP") or NONE,
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _serviceaccount_row(obj: dict[str, Any], now: datetime) -> Cells:
    return [_meta(obj).get("name", ""), len(obj.get("secrets") or []), age(obj, now)]


def _lease_row(obj: dict[str, Any], now: datetime) -> Cells:
    holder = (obj.get("spec") or {}).get("holderIdentity") or ""
    return [_meta(obj).get("name", ""), holder, age(obj, now)]


def _role_row(obj: dict[str, Any], now: datetime) -> Cells:
    return [_meta(obj).get("name", ""), _meta(obj).get("creationTimestamp") or ""]


def _binding_row(obj: dict[str, Any], now: datetime) -> Cells:
    ref = obj.get("roleRef") or {}
    found: dict[str, list[str]] = {"User": [], "Group": [], "ServiceAccount": []}
    for subject in obj.get("subjects") or []:
        name = subject.get("name") or ""
        if subject.get("kind") == "ServiceAccount" and subject.get("namespace"):
            name = f"{subject['namespace']}/{name}"
        found.setdefault(subject.get("kind") or "", []).append(name)
    return [
        _meta(obj).get("name", ""),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        age(obj, now),
        *(", ".join(found[kind]) for kind in ("User", "Group", "ServiceAccount")),
    ]


def _webhooks_row(obj: dict[str, Any], now: datetime) -> Cells:
    return [_meta(obj).get("name", ""), len(obj.get("webhooks") or []), age(obj, now)]


ROLE_PRINTER: tuple[list[Column], RowFunction] = (
    [NAME, column("Created At", "The time the role was created.", kind="date")],
    _role_row,
)
BINDING_PRINTER: tuple[list[Column], RowFunction] = (
    [
        NAME,
        column("Role", "The role the binding grants (Kind/name)."),
        AGE,
        column("Users", "The users the binding names.", priority=1),
        column("Groups", "The groups the binding names.", priority=1),
        column("ServiceAccounts", "The service accounts the binding names.", priority=1),
    ],
    _binding_row,
)
WEBHOOKS_PRINTER: tuple[list[Column], RowFunction] = (
    [NAME, column("Webhooks", "The number of webhooks.", kind="integer"), AGE],
    _webhooks_row,
)


NODE_COLUMNS = [
    NAME,
    column("Status", "The status of the node."),
    column("Roles", "The roles of the node."),
    AGE,
    column("Version", "Kubelet Version reported by the node."),
    column("Internal-IP", "List of internal IPs for the node.", priority=1),
    column("External-IP", "List of external IPs for the node.", priority=1),
    column("OS-Image", "OS image reported by the node.", priority=1),
    column("Kernel-Version", "Kernel version reported by the node.", priority=1),
    column("Container-Runtime", "Container runtime reported by the node.", priority=1),
]

BUILTIN: dict[str, tuple[list[Column], RowFunction]] = {
    "core/pods": (POD_COLUMNS, _pod_row),
    "core/services": (SERVICE_COLUMNS, _service_row),
    "core/events": (EVENT_COLUMNS, _event_row),
    "core/namespaces": ([NAME, column("Status", "The namespace's phase."), AGE], _namespace_row),
    "core/configmaps": ([NAME, DATA, AGE], _configmap_row),
    "core/nodes": (NODE_COLUMNS, _node_row),
    "core/serviceaccounts": (
        [NAME, column("Secrets", "The number of secrets.", kind="integer"), AGE],
        _serviceaccount_row,
    ),
    "coordination.k8s.io/leases": (
        [NAME, column("Holder", "The holder of the lease."), AGE],
        _lease_row,
    ),
    "core/secrets": ([NAME, column("Type", "The secret's type."), DATA, AGE], _secret_row),
    # stored only (see resources.BUILTIN), printed as kube prints them
    "rbac.authorization.k8s.io/roles": ROLE_PRINTER,
    "rbac.authorization.k8s.io/clusterroles": ROLE_PRINTER,
    "rbac.authorization.k8s.io/rolebindings": BINDING_PRINTER,
    "rbac.authorization.k8s.io/clusterrolebindings": BINDING_PRINTER,
    "admissionregistration.k8s.io/validatingwebhookconfigurations": WEBHOOKS_PRINTER,
    "admissionregistration.k8s.io/mutatingwebhookconfigurations": WEBHOOKS_PRINTER,
}
