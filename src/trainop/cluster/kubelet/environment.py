"""A container's environment and argv, resolved as kubelet does (pure).

Order (as kubelet's ``makeEnvironmentVariables``): ``envFrom`` sources in order (with their
``prefix``; keys that are not valid variable names are skipped), then ``env`` entries in order,
each overriding what came before. An ``env`` value may reference variables defined *before it*
as ``$(NAME)``, and the variables the kubelet itself gives the container (``injected``: the
sandbox's ``TRAINOP_*``, as Kubernetes lets env values reference its service variables); a
variable of the pod's own of the same name wins once defined. ``command`` and ``args`` may
reference any variable of the container. ``$$`` is a literal ``$``; a reference to an undefined
variable stays as written (``expand``).

Sources: ``value``; ``valueFrom.fieldRef`` (``metadata.name|namespace|uid``,
``metadata.labels['k']``, ``metadata.annotations['k']``, ``spec.nodeName``,
``spec.serviceAccountName``, ``status.hostIP|hostIPs|podIP|podIPs``);
``valueFrom.resourceFieldRef`` (``limits|requests`` of ``cpu``, ``memory``,
``ephemeral-storage``, with ``divisor``; an unset limit is the node's capacity, as kubelet uses
node allocatable); ``configMapKeyRef`` / ``secretKeyRef`` (``optional`` honoured); ``envFrom``
``configMapRef`` / ``secretRef``. A missing non-optional ConfigMap, Secret or key raises
``ConfigError`` with kubelet's message (``configmap "x" not found``); the caller reports it as
``CreateContainerConfigError``.

ConfigMaps and Secrets are looked up in ``Sources``, which the caller fetched beforehand
(``referenced`` names them), so this module stays pure. Neighbours: ``podrun`` (fetches and
calls), ``sandbox`` (adds the sandbox variables afterwards).
"""

from __future__ import annotations

import base64
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from trainop import errors
from trainop.engine import quantities

_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")
Raw = dict[str, Any]


class ConfigError(errors.TrainopError):
    """A container cannot be configured: a missing ConfigMap, Secret, key or bad reference."""


@dataclass(frozen=True, slots=True)
class Node:
    """Facts about the local node that pods can read."""

    name: str
    host_ip: str
    cpus: int
    memory_bytes: int
    pod_ip: str = ""  # the pod's own address where it has one (``status.podIP``)


@dataclass(frozen=True, slots=True)
class Sources:
    """ConfigMap and Secret data by name (``None``: not found). Secret values are decoded."""

    config_maps: Mapping[str, Mapping[str, str] | None] = field(default_factory=dict)
    secrets: Mapping[str, Mapping[str, str] | None] = field(default_factory=dict)


def expand(text: str, lookup: Callable[[str], str | None]) -> str:
    """Kubernetes ``$(VAR)`` expansion of ``text`` (see the module docstring)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "$" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        following = text[i + 1]
        if following == "$":
            out.append("$")
            i += 2
        elif following == "(" and (close := text.find(")", i + 2)) != -1:
            name = text[i + 2 : close]
            value = lookup(name)
            out.append(f"$({name})" if value is None else value)
            i = close + 1
        else:
            out.append("$" + following)
            i += 2
    return "".join(out)


def referenced(pod: Raw) -> tuple[set[str], set[str]]:
    """Names of the ConfigMaps and Secrets that the pod's env, envFrom and volumes read."""
    config_maps: set[str] = set()
    secrets: set[str] = set()
    spec = pod.get("spec") or {}
    for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for source in container.get("envFrom") or []:
            _add(config_maps, source.get("configMapRef"))
            _add(secrets, source.get("secretRef"))
        for var in container.get("env") or []:
            value_from = var.get("valueFrom") or {}
            _add(config_maps, value_from.get("configMapKeyRef"))
            _add(secrets, value_from.get("secretKeyRef"))
    for volume in spec.get("volumes") or []:
        _add(config_maps, volume.get("configMap"))
        if volume.get("secret"):
            secrets.add(str(volume["secret"].get("secretName") or ""))
    return config_maps, secrets


def _add(names: set[str], ref: Raw | None) -> None:
    if ref and ref.get("name"):
        names.add(str(ref["name"]))


def decode_secret(secret: Raw) -> dict[str, str]:
    """A Secret's ``data`` (base64) and ``stringData``, decoded to text."""
    found = {k: base64.b64decode(v).decode(errors="replace") for k, v in _data(secret, "data")}
    found.update(_data(secret, "stringData"))
    return found


def config_map_data(config_map: Raw) -> dict[str, str]:
    """A ConfigMap's ``data`` (``binaryData`` is for volumes only, as in Kubernetes)."""
    return dict(_data(config_map, "data"))


def _data(obj: Raw, key: str) -> Iterable[tuple[str, str]]:
    return ((str(k), str(v)) for k, v in (obj.get(key) or {}).items())


def resolve(
    pod: Raw,
    container: Raw,
    sources: Sources,
    node: Node,
    *,
    injected: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The container's own variables in definition order (see the module docstring);
    ``injected`` is visible to ``$(VAR)`` expansion but not part of the result."""
    env: dict[str, str] = {}
    seen = dict(injected or {})
    for source in container.get("envFrom") or []:
        found = _from_source(source, sources)
        env.update(found)
        seen.update(found)
    for var in container.get("env") or []:
        name = str(var["name"])
        if var.get("valueFrom"):
            value = _value_from(var["valueFrom"], pod, container, sources, node)
            if value is None:
                continue  # an optional reference that does not resolve: no variable
        else:
            value = expand(str(var.get("value") or ""), seen.get)
        env[name] = seen[name] = value
    return env


def argv(container: Raw, env: Mapping[str, str]) -> list[str]:
    """``command`` + ``args`` with ``$(VAR)`` expanded from the container's variables."""
    words = [*(container.get("command") or []), *(container.get("args") or [])]
    return [expand(str(word), env.get) for word in words]


def _from_source(source: Raw, sources: Sources) -> dict[str, str]:
    prefix = str(source.get("prefix") or "")
    if source.get("configMapRef"):
        ref, kind, table = source["configMapRef"], "configmap", sources.config_maps
    elif source.get("secretRef"):
        ref, kind, table = source["secretRef"], "secret", sources.secrets
    else:
        return {}
    data = table.get(str(ref.get("name")))
    if data is None:
        if ref.get("optional"):
            return {}
        raise ConfigError(f'{kind} "{ref.get("name")}" not found')
    return {prefix + k: v for k, v in data.items() if _NAME.match(prefix + k)}


def _value_from(
    value_from: Raw, pod: Raw, container: Raw, sources: Sources, node: Node
) -> str | None:
    namespace = pod["metadata"].get("namespace", "")
    if "fieldRef" in value_from:
        return field_value(pod, str(value_from["fieldRef"].get("fieldPath")), node)
    if "resourceFieldRef" in value_from:
        return _resource(pod, container, value_from["resourceFieldRef"], node)
    if "configMapKeyRef" in value_from:
        ref = value_from["configMapKeyRef"]
        return _key(ref, sources.config_maps, "configmap", "ConfigMap", namespace)
    if "secretKeyRef" in value_from:
        return _key(value_from["secretKeyRef"], sources.secrets, "secret", "Secret", namespace)
    raise ConfigError(f"unsupported valueFrom source: {sorted(value_from)}")


def _key(
    ref: Raw,
    table: Mapping[str, Mapping[str, str] | None],
    kind: str,
    title: str,
    namespace: str,
) -> str | None:
    name, key, optional = str(ref.get("name")), str(ref.get("key")), bool(ref.get("optional"))
    data = table.get(name)
    if data is None:
        if optional:
            return None
        raise ConfigError(f'{kind} "{name}" not found')
    if key not in data:
        if optional:
            return None
        raise ConfigError(f"couldn't find key {key} in {title} {namespace}/{name}")
    return data[key]


def field_value(pod: Raw, path: str, node: Node) -> str:
    """The value of a downward-API ``fieldRef`` path (``ConfigError`` when unsupported)."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName") or node.name,
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.hostIP": node.host_ip,
        "status.hostIPs": node.host_ip,
        "status.podIP": node.pod_ip or node.host_ip,
        "status.podIPs": node.pod_ip or node.host_ip,
    }
    if path in simple:
        return str(simple[path] or "")
    match = _SUBSCRIPT.match(path)
    if match is not None:
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    raise ConfigError(f"unsupported fieldRef fieldPath: {path}")


def _resource(pod: Raw, container: Raw, ref: Raw, node: Node) -> str:
    target = container
    if ref.get("containerName"):
        every = [*(pod["spec"].get("initContainers") or []), *pod["spec"]["containers"]]
        named = [c for c in every if c.get("name") == ref["containerName"]]
        if not named:
            raise ConfigError(f"resourceFieldRef: no container named {ref['containerName']}")
        target = named[0]
    kind, _, resource = str(ref.get("resource")).partition(".")
    if kind not in ("limits", "requests") or resource not in _CAPACITY:
        raise ConfigError(f"unsupported resourceFieldRef resource: {ref.get('resource')}")
    resources = target.get("resources") or {}
    value = (resources.get(kind) or {}).get(resource)
    if value is None and kind == "requests":
        value = (resources.get("limits") or {}).get(resource)  # defaulted as the API does
    amount = quantities.parse(value).amount if value is not None else None
    if amount is None:
        amount = _CAPACITY[resource](node) if kind == "limits" else Decimal(0)
    divisor = quantities.parse(ref.get("divisor") or "1").amount or Decimal(1)
    return str(math.ceil(amount / divisor))


_CAPACITY: dict[str, Callable[[Node], Decimal]] = {
    "cpu": lambda node: Decimal(node.cpus),
    "memory": lambda node: Decimal(node.memory_bytes),
    "ephemeral-storage": lambda node: Decimal(0),
}
