"""The defaults kube-apiserver fills into built-in objects, for every write of the main resource.

Role: what a client reads back from a cluster is its body plus the API's defaults (Kubernetes
1.31: ``SetDefaults_*`` of core/v1 and batch/v1) plus what the admission plugins every cluster
runs add to a new pod. ``apply`` runs on the decoded body of a create, an update, every patch
and server-side apply (dry-run included), before validation and storage, as kube-apiserver
defaults every request body when it decodes it. A value the client gave is never replaced;
values of the wrong type are left alone for validation to refuse. (Kube's own exceptions are
kept: a Namespace's name label is always its name; ``sessionAffinity: None`` drops a
``sessionAffinityConfig``.)

- Pod: ``pod_spec`` (restartPolicy, dnsPolicy, terminationGracePeriodSeconds, schedulerName,
  securityContext, each container's pull policy, termination message, ports' protocol, probes,
  env ``fieldRef``, volumes' modes), plus what only a Pod gets: requests copied from limits,
  ``enableServiceLinks``, with ``hostNetwork`` each port's ``hostPort``; on create the
  admission plugins' ServiceAccount ``default``, priority 0 with ``PreemptLowerPriority``, and
  the not-ready/unreachable tolerations of 300 s (the service account token volume is not
  added: local kubelets run no projected volumes).
- batch/v1 Job: parallelism/completions, backoffLimit, completionMode, suspend,
  podReplacementPolicy, the template's ``pod_spec``; the Job's labels from its template when
  it has none; on create (``manualSelector`` not true) the generated selector and labels.
- Namespace: the ``kubernetes.io/metadata.name`` label (always its name, as kube sets it);
  Secret: ``type: Opaque``.
- Service: type, sessionAffinity, ports' protocol and targetPort, internalTrafficPolicy; the IP
  family fields where the service has a ``clusterIP`` (``rest.clusterips`` allocates one
  after admission where it has none).

Pure functions on plain dicts (no I/O).
"""

from __future__ import annotations

from typing import Any

from trainop.api import images

JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
SELECTOR_LABEL = "batch.kubernetes.io/controller-uid"
NAMESPACE_LABEL = "kubernetes.io/metadata.name"
FILE_MODE = 0o644  # 420, what kube stores as defaultMode
TOLERATION_SECONDS = 300
_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
_PROBE = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}


def apply(group: str, plural: str, obj: dict[str, Any], *, create: bool) -> None:
    """Default ``obj`` (the body of a write to ``group``/``plural``) in place; ``create`` adds
    what kube sets only on create (pod admission, a Job's generated selector)."""
    if not group and plural == "namespaces":
        namespace(obj)
    if not group and plural == "secrets":
        _default(obj, "type", "Opaque")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if not group and plural == "pods":
        pod(spec)
        if create:
            pod_admission(spec)
    elif not group and plural == "services":
        service(spec)
    elif group == "batch" and plural == "jobs":
        if create:
            generate_selector(obj)
        job(obj)


def _default(parent: dict[str, Any], key: str, value: Any) -> Any:
    """``parent[key]``, set to ``value`` first when missing or null (kube reads null as unset)."""
    if parent.get(key) is None:
        parent[key] = value
    return parent[key]


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _dict(parent: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*_dicts(spec.get("initContainers")), *_dicts(spec.get("containers"))]


# ---- pods -------------------------------------------------------------------------------


def pod(spec: dict[str, Any]) -> None:
    """A Pod's ``spec``: ``pod_spec`` plus what kube defaults on a Pod but not on a template."""
    pod_spec(spec)
    _default(spec, "enableServiceLinks", True)
    for container in _containers(spec):
        if spec.get("hostNetwork") is True:  # the host's port is the container's
            for port in _dicts(container.get("ports")):
                if not port.get("hostPort") and "containerPort" in port:
                    port["hostPort"] = port["containerPort"]
        resources = _dict(container, "resources")
        limits = _dict(resources, "limits") if resources is not None else None
        if resources is None or not limits:
            continue
        requests = _default(resources, "requests", {})
        if isinstance(requests, dict):
            for name, value in limits.items():
                _default(requests, name, value)


def pod_spec(spec: dict[str, Any]) -> None:
    """A pod spec, of a Pod or of a template (``SetDefaults_PodSpec`` and what it reaches)."""
    for key, value in (
        ("restartPolicy", "Always"),
        ("terminationGracePeriodSeconds", 30),
        ("dnsPolicy", "ClusterFirst"),
        ("schedulerName", "default-scheduler"),
    ):
        _default(spec, key, value)
    _default(spec, "securityContext", {})
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if account:  # the deprecated alias and the field always read the same
        for key in ("serviceAccountName", "serviceAccount"):
            if not spec.get(key):
                spec[key] = account
    for c in [*_containers(spec), *_dicts(spec.get("ephemeralContainers"))]:
        container(c)
    for volume in _dicts(spec.get("volumes")):
        _volume(volume)


def container(c: dict[str, Any]) -> None:
    """One container (also an init or ephemeral container)."""
    _default(c, "terminationMessagePath", "/dev/termination-log")
    _default(c, "terminationMessagePolicy", "File")
    image = c.get("image")
    if not c.get("imagePullPolicy") and isinstance(image, str | None):
        c["imagePullPolicy"] = images.pull_policy(image or "")
    _default(c, "resources", {})
    for port in _dicts(c.get("ports")):
        _default(port, "protocol", "TCP")
    for env in _dicts(c.get("env")):
        source = _dict(env, "valueFrom")
        field_ref = _dict(source, "fieldRef") if source is not None else None
        if field_ref is not None:
            _default(field_ref, "apiVersion", "v1")
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = _dict(c, key)
        if probe is not None:
            for name, value in _PROBE.items():
                _default(probe, name, value)
            _http_get(probe)
    lifecycle = _dict(c, "lifecycle")
    for key in ("postStart", "preStop"):
        handler = _dict(lifecycle, key) if lifecycle is not None else None
        if handler is not None:
            _http_get(handler)


def _http_get(handler: dict[str, Any]) -> None:
    action = _dict(handler, "httpGet")
    if action is not None:
        _default(action, "path", "/")
        _default(action, "scheme", "HTTP")


def _volume(volume: dict[str, Any]) -> None:
    if set(volume) <= {"name"}:  # no source at all: an emptyDir
        volume["emptyDir"] = {}
    for key in ("configMap", "secret", "projected", "downwardAPI"):
        source = _dict(volume, key)
        if source is not None:
            _default(source, "defaultMode", FILE_MODE)
    downward = _dict(volume, "downwardAPI")
    projected = _dict(volume, "projected")
    items = _dicts(downward.get("items")) if downward is not None else []
    for projection in _dicts(projected.get("sources")) if projected is not None else []:
        api = _dict(projection, "downwardAPI")
        items += _dicts(api.get("items")) if api is not None else []
    for item in items:
        field_ref = _dict(item, "fieldRef")
        if field_ref is not None:
            _default(field_ref, "apiVersion", "v1")
    host_path = _dict(volume, "hostPath")
    if host_path is not None:
        _default(host_path, "type", "")


def pod_admission(spec: dict[str, Any]) -> None:
    """What the ServiceAccount, Priority and DefaultTolerationSeconds admission plugins add to
    a new pod (the service account's token volume excepted, see the module docstring)."""
    if not spec.get("serviceAccountName") and not spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"] = "default"
    if not spec.get("priorityClassName"):
        _default(spec, "priority", 0)
        _default(spec, "preemptionPolicy", "PreemptLowerPriority")
    tolerations = spec.get("tolerations")
    if tolerations is None:
        tolerations = []
    if not isinstance(tolerations, list):
        return
    added = [
        {
            "key": taint,
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": TOLERATION_SECONDS,
        }
        for taint in _TAINTS
        if not any(_tolerates(t, taint) for t in _dicts(tolerations))
    ]
    if added:
        spec["tolerations"] = [*tolerations, *added]


def _tolerates(toleration: dict[str, Any], taint: str) -> bool:
    """Whether ``toleration`` already covers the ``taint:NoExecute`` taint (an empty key with
    ``Exists`` covers every key, an empty effect every effect)."""
    key, effect = toleration.get("key") or "", toleration.get("effect") or ""
    key_ok = key == taint or (not key and toleration.get("operator") == "Exists")
    return key_ok and effect in ("", "NoExecute")


def namespace(obj: dict[str, Any]) -> None:
    """A Namespace is labelled with its own name (``kubernetes.io/metadata.name``)."""
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if isinstance(meta, dict) and isinstance(name, str) and name:
        labels = _default(meta, "labels", {})
        if isinstance(labels, dict):
            labels[NAMESPACE_LABEL] = name


# ---- services ---------------------------------------------------------------------------


def service(spec: dict[str, Any]) -> None:
    """A Service's ``spec``."""
    _default(spec, "type", "ClusterIP")
    _default(spec, "sessionAffinity", "None")
    if spec.get("sessionAffinity") == "None":
        spec.pop("sessionAffinityConfig", None)  # kube drops it: it configures ClientIP only
    if spec.get("sessionAffinity") == "ClientIP":
        config = _default(spec, "sessionAffinityConfig", {})
        client_ip = _default(config, "clientIP", {}) if isinstance(config, dict) else None
        if isinstance(client_ip, dict):
            _default(client_ip, "timeoutSeconds", 10800)
    for port in _dicts(spec.get("ports")):
        _default(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, "") and "port" in port:
            port["targetPort"] = port["port"]
    kind = spec.get("type")
    if kind == "ExternalName":
        return
    _default(spec, "internalTrafficPolicy", "Cluster")
    if kind in ("NodePort", "LoadBalancer") or spec.get("externalIPs"):
        _default(spec, "externalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        _default(spec, "allocateLoadBalancerNodePorts", True)
    cluster_ip = spec.get("clusterIP")
    if isinstance(cluster_ip, str) and cluster_ip:
        _default(spec, "clusterIPs", [cluster_ip])
        _default(spec, "ipFamilies", ["IPv6" if ":" in cluster_ip else "IPv4"])
        _default(spec, "ipFamilyPolicy", "SingleStack")


# ---- batch/v1 Jobs ----------------------------------------------------------------------


def job(obj: dict[str, Any]) -> None:
    """A Job (``SetDefaults_Job``): its spec, its template's pod spec, its labels."""
    spec = obj["spec"]
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    _default(spec, "parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2**31 - 1 if spec.get("backoffLimitPerIndex") is not None else 6
    _default(spec, "completionMode", "NonIndexed")
    _default(spec, "suspend", False)
    failure_policy = spec.get("podFailurePolicy")
    rules = _dicts(failure_policy.get("rules")) if isinstance(failure_policy, dict) else []
    for rule in rules:
        for pattern in _dicts(rule.get("onPodConditions")):
            _default(pattern, "status", "True")
    _default(spec, "podReplacementPolicy", "Failed" if failure_policy else "TerminatingOrFailed")
    template = _dict(spec, "template")
    if template is None:
        return
    template_spec = _dict(template, "spec")
    if template_spec is not None:
        pod_spec(template_spec)
    template_meta = _dict(template, "metadata")
    labels = template_meta.get("labels") if template_meta is not None else None
    meta = obj.get("metadata")
    if isinstance(labels, dict) and labels and isinstance(meta, dict) and not meta.get("labels"):
        meta["labels"] = dict(labels)


def generate_selector(obj: dict[str, Any]) -> None:
    """On create, unless ``manualSelector`` is true: the template gets the ``job-name`` and
    ``controller-uid`` labels (both spellings, a given value kept) and the selector matches
    ``batch.kubernetes.io/controller-uid``. Needs the Job's uid (set by ``objects``)."""
    spec, meta = obj["spec"], obj.get("metadata") or {}
    if spec.get("manualSelector") is True:
        return
    template = _default(spec, "template", {})
    template_meta = _default(template, "metadata", {}) if isinstance(template, dict) else None
    if not isinstance(template_meta, dict):
        return
    labels = _default(template_meta, "labels", {})
    if not isinstance(labels, dict):
        return
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    for key in JOB_NAME_LABELS:
        _default(labels, key, name)
    for key in CONTROLLER_UID_LABELS:
        _default(labels, key, uid)
    selector = _default(spec, "selector", {})
    match = _default(selector, "matchLabels", {}) if isinstance(selector, dict) else None
    if isinstance(match, dict):
        _default(match, SELECTOR_LABEL, uid)
