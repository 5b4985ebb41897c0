"""A pod's ``securityContext`` and DNS settings as container run options (note 095).

Pure functions, shared by the Podman and Docker dialects: spec in, ``run`` words out. Only
the container runtimes use them; the process runtime runs every container as the session's
own user with the host's resolver.

securityContext, the container's fields overriding the pod's as kubelet merges them:
``runAsUser``/``runAsGroup`` are ``--user UID[:GID]`` (a group alone keeps the image's user);
the pod's ``supplementalGroups`` and ``fsGroup`` are ``--group-add`` each (departure: a volume's
ownership is not changed to ``fsGroup``); ``readOnlyRootFilesystem`` is ``--read-only``;
``capabilities`` are ``--cap-add``/``--cap-drop`` with the names as given (both CLIs take them
with or without ``CAP_``); ``allowPrivilegeEscalation: false`` is ``--security-opt
no-new-privileges``. ``refusal`` is kubelet's ``runAsNonRoot`` check against the image's
``Config.User``, and the refusal of ``privileged`` containers (never run in local mode).
Values are the API server's to validate: here they are only mapped.

DNS (``dns_options``), only on the session's network: kubelet's search path for a cluster
pod, ``<ns>.svc.cluster.local svc.cluster.local cluster.local``, is ``<ns>.svc svc`` here, the
suffixes the network's aliases have (``network.network_aliases``), so ``<pod>``,
``<pod>.<ns>``, ``<hostname>.<subdomain>`` resolve as on a cluster; ``dnsConfig`` adds its
``searches`` (one ending in ``.svc.cluster.local`` is used without ``.cluster.local``, the
same name here), ``nameservers`` (after the network's DNS server) and ``options``.
``dnsPolicy: None`` is ``dnsConfig`` alone; ``Default`` has no cluster search path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CONFIG_ERROR = "CreateContainerConfigError"  # kubelet's waiting reason for a refusal
CLUSTER_SUFFIX = ".cluster.local"


def merged(pod_spec: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, Any]:
    """The container's effective securityContext: the pod's ``runAsUser``, ``runAsGroup``
    and ``runAsNonRoot`` unless the container sets them, with the pod-only
    ``supplementalGroups`` and ``fsGroup`` and the container-only fields."""
    pod = pod_spec.get("securityContext") or {}
    own = container.get("securityContext") or {}
    found = {k: pod[k] for k in ("runAsUser", "runAsGroup", "runAsNonRoot") if k in pod}
    found.update({k: pod[k] for k in ("supplementalGroups", "fsGroup") if k in pod})
    found.update({k: v for k, v in own.items() if v is not None})
    return found


def image_user(config: Mapping[str, Any]) -> str:
    """The user part of the image's ``Config.User`` (``user[:group]``), "" when unset."""
    return str(config.get("User") or "").split(":", 1)[0]


def security_options(
    pod_spec: Mapping[str, Any], container: Mapping[str, Any], user: str = ""
) -> list[str]:
    """The ``run`` words for the container's effective securityContext; ``user`` is the
    image's user (``image_user``), kept when only ``runAsGroup`` is set."""
    context = merged(pod_spec, container)
    words: list[str] = []
    uid, gid = context.get("runAsUser"), context.get("runAsGroup")
    if uid is not None or gid is not None:
        who = str(uid) if uid is not None else (user or "0")
        words += ["--user", who if gid is None else f"{who}:{gid}"]
    groups = [*(context.get("supplementalGroups") or [])]
    if context.get("fsGroup") is not None and context["fsGroup"] not in groups:
        groups.append(context["fsGroup"])
    for group in groups:
        words += ["--group-add", str(group)]
    if context.get("readOnlyRootFilesystem"):
        words.append("--read-only")
    capabilities = context.get("capabilities") or {}
    for name in capabilities.get("drop") or []:
        words += ["--cap-drop", str(name)]
    for name in capabilities.get("add") or []:
        words += ["--cap-add", str(name)]
    if context.get("allowPrivilegeEscalation") is False:
        words += ["--security-opt", "no-new-privileges"]
    return words


def refusal(pod_spec: Mapping[str, Any], container: Mapping[str, Any], user: str, pod: str) -> str:
    """Why kubelet would not create this container (its ``CreateContainerConfigError``
    message), "" when it would: ``privileged`` (never run in local mode), or
    ``runAsNonRoot`` with a root user. ``user`` is the image's (``image_user``; kubelet takes
    an unset one as root and cannot verify a name), ``pod`` is ``<ns>/<name>``."""
    context = merged(pod_spec, container)
    name = container.get("name")
    where = f'(pod: "{pod}", container: {name})'
    if context.get("privileged"):
        return f"privileged containers are not run in local mode {where}"
    if not context.get("runAsNonRoot"):
        return ""
    uid = context.get("runAsUser")
    if uid is not None:
        return f"container's runAsUser breaks non-root policy {where}" if int(uid) == 0 else ""
    if user.isdigit() or not user:
        if int(user or 0) == 0:
            return f"container has runAsNonRoot and image will run as root {where}"
        return ""
    return (
        f"container has runAsNonRoot and image has non-numeric user ({user}), cannot verify "
        f"user is non-root {where}"
    )


def dns_options(pod_spec: Mapping[str, Any], namespace: str, network_dns: str = "") -> list[str]:
    """The ``run`` words for the pod's DNS on the session's network (see the module
    docstring). ``network_dns`` is the network's DNS server where ``--dns`` would replace it
    in the container's resolv.conf (Podman: its gateway), "" where the runtime keeps it
    (Docker's embedded server forwards to the ``--dns`` servers)."""
    policy = str(pod_spec.get("dnsPolicy") or "ClusterFirst")
    config = pod_spec.get("dnsConfig") or {}
    cluster = policy in ("ClusterFirst", "ClusterFirstWithHostNet")
    searches = [f"{namespace}.svc", "svc"] if cluster else []
    for search in config.get("searches") or []:
        here = str(search)
        if here.endswith(f".svc{CLUSTER_SUFFIX}"):
            here = here.removesuffix(CLUSTER_SUFFIX)
        if here not in searches:
            searches.append(here)
    words: list[str] = []
    for search in searches:
        words += ["--dns-search", search]
    servers = [str(s) for s in config.get("nameservers") or []]
    if servers and cluster and network_dns:
        servers.insert(0, network_dns)
    for server in servers:
        words += ["--dns", server]
    for option in config.get("options") or []:
        name, value = option.get("name"), option.get("value")
        if name:  # the API lets an option's name be left out: nothing to pass then
            words += ["--dns-option", str(name) + (f":{value}" if value else "")]
    return words
