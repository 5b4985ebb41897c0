"""Cluster IPs of Services, allocated from a service range as kube-apiserver allocates them.

Role: a Service that needs a cluster IP (any type but ``ExternalName``, ``clusterIP`` not
``None``) gets ``spec.clusterIP`` and ``spec.clusterIPs`` from the range (kube's default
service CIDR, ``10.96.0.0/12``), unique among the stored Services:

- a requested address must be in the range, not the network or broadcast address, and
  free: otherwise 422 with kube's words, ``spec.clusterIPs: Invalid value:
  []string{"10.0.0.5"}: failed to allocate IP 10.0.0.5: the provided IP (10.0.0.5) is not in
  the valid range. The range of valid IPs is 10.96.0.0/12`` (or ``provided IP is already
  allocated``); a string that is no IPv4 address is refused too (``must be a valid IP
  address``; the range is IPv4 only, as a single-stack cluster);
- otherwise an address is picked as kube's allocator does: at random in the upper part of
  the range, the lower part (its first 256 addresses) being left for requested ones, and only
  when the upper part is full, there; the range's first address is the ``kubernetes``
  Service's (kube-apiserver's own), so never handed out;
- on update the addresses may not change (``spec.clusterIPs[0]: Invalid value: []string{...}:
  may not change once set``); a body without them keeps the stored ones;
- an address is free again once the Service that held it is deleted (or no longer needs one).

Which addresses are held is derived from the store: read from the stored Services when the
server starts, then kept up to date from the writes it queues and the deletions it commits,
so allocations survive a restart and no two Services share one. These are API addresses
only: nothing on the machine routes to them (pods reach each other by the addresses and
names the session gives them, note 095). Neighbours: ``writes`` (calls ``assign``), the
store's listener (releases).
"""

from __future__ import annotations

import ipaddress
import json
import random
from typing import Any

from trainop.cluster.apiserver import store
from trainop.cluster.apiserver.http import status
from trainop.cluster.apiserver.rest import resources

SERVICES = "core/services"
DEFAULT_RANGE = "10.96.0.0/12"
_STATIC_BAND = 256  # kube: min(max(16, size/16), 256) addresses kept for requested IPs
_INVALID_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
Obj = dict[str, Any]


def needs_address(spec: Obj) -> bool:
    """Whether a Service with this spec holds a cluster IP."""
    return _has_cluster_ip_type(spec) and spec.get("clusterIP") != "None"


def addresses_of(obj: Obj) -> list[str]:
    """The cluster IPs a stored Service holds."""
    spec = obj.get("spec") or {}
    if not isinstance(spec, dict) or not needs_address(spec):
        return []
    ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    return [ip for ip in ips if isinstance(ip, str) and ip != "None"]


class ClusterIPs:
    """The service range and which of its addresses are held (see the module docstring)."""

    def __init__(self, cidr: str = DEFAULT_RANGE) -> None:
        self.network = ipaddress.IPv4Network(cidr)
        self._held: dict[str, store.Key] = {}
        self._random = random.SystemRandom()

    @property
    def reserved(self) -> str:
        """The range's first address: the ``kubernetes`` Service's."""
        return str(self.network.network_address + 1)

    def start(self, db: store.Store) -> None:
        """Take the addresses of the stored Services, then follow committed deletions."""
        for stored in db.select(resource=SERVICES):
            for ip in addresses_of(stored.obj):
                self._held.setdefault(ip, stored.key)
        db.add_listener(self._on_event)

    def assign(
        self,
        rt: resources.ResourceType,
        key: store.Key,
        obj: Obj,
        *,
        old: Obj | None,
        dry_run: bool,
    ) -> None:
        """Give ``obj`` (a Service about to be stored under ``key``; ``old`` the stored one on
        an update) its cluster IPs, or raise kube's 422; a dry run holds nothing."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        old_spec = (old or {}).get("spec") or {}
        if old is not None and _has_cluster_ip_type(old_spec) and _has_cluster_ip_type(spec):
            _follow_singular(old_spec, spec)
            kept = _requested(old_spec)  # "None" included: headless stays headless
            if kept and not _requested(spec):
                spec["clusterIP"], spec["clusterIPs"] = kept[0], list(kept)
                for field in ("ipFamilies", "ipFamilyPolicy"):
                    if field in old_spec:
                        spec.setdefault(field, old_spec[field])
            if kept and _requested(spec)[:1] != kept[:1]:
                shown = _go_list(spec.get("clusterIPs") or _requested(spec))
                body = f"Invalid value: {shown}: may not change once set"
                raise status.rejected(rt, key.name, [_cause("spec.clusterIPs[0]", body)])
            if kept:
                return
        if not needs_address(spec):
            return
        requested = _requested(spec)
        ip = self._take(rt, key, spec, requested[0] if requested else None, dry_run=dry_run)
        spec["clusterIP"], spec["clusterIPs"] = ip, [ip]
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")

    def _take(
        self,
        rt: resources.ResourceType,
        key: store.Key,
        spec: Obj,
        ip: str | None,
        *,
        dry_run: bool,
    ) -> str:
        ip = self._pick() if ip is None else self._check(rt, key.name, spec, ip)
        if not dry_run:
            self._held[ip] = key
        return ip

    def _check(self, rt: resources.ResourceType, name: str, spec: Obj, ip: str) -> str:
        shown = _go_list(spec.get("clusterIPs") or [ip])
        try:
            address = ipaddress.IPv4Address(ip)
        except ValueError:
            body = f"Invalid value: {json.dumps(ip)}: {_INVALID_IP}"
            raise status.rejected(rt, name, [_cause("spec.clusterIPs[0]", body)]) from None
        usable = address in self.network and address not in (
            self.network.network_address,
            self.network.broadcast_address,
        )
        ip = str(address)
        if not usable:
            why = (
                f"the provided IP ({ip}) is not in the valid range. The range of valid IPs is "
                f"{self.network}"
            )
        elif ip in self._held or ip == self.reserved:
            why = "provided IP is already allocated"
        else:
            return ip
        body = f"Invalid value: {shown}: failed to allocate IP {ip}: {why}"
        raise status.rejected(rt, name, [_cause("spec.clusterIPs", body)])

    def _pick(self) -> str:
        """A free address: from a random point of the upper band onwards, then the lower."""
        first = int(self.network.network_address) + 1
        size = self.network.num_addresses - 2
        band = min(_STATIC_BAND, size // 2)
        start = self._random.randrange(band, size)
        for offset in [*range(start, size), *range(band, start), *range(band)]:
            ip = str(ipaddress.IPv4Address(first + offset))
            if ip not in self._held and ip != self.reserved:
                return ip
        raise status.RequestError(
            "Internal error occurred: failed to allocate a serviceIP: range is full",
            status=500,
            reason="InternalError",
        )

    def _on_event(self, event: store.Event) -> None:
        """Release what a committed write of a Service no longer holds."""
        if event.stored.key.resource != SERVICES:
            return
        now = set() if event.type == store.DELETED else set(addresses_of(event.stored.obj))
        before = addresses_of(event.prev.obj) if event.prev is not None else []
        for ip in before:
            if ip not in now and self._held.get(ip) == event.stored.key:
                del self._held[ip]


def _follow_singular(old: Obj, new: Obj) -> None:
    """kube's rule for an update that changed ``clusterIP`` but not ``clusterIPs``: the list
    follows the single field (and is cleared with it)."""
    if new.get("clusterIP") != old.get("clusterIP") and new.get("clusterIPs") == old.get(
        "clusterIPs"
    ):
        if new.get("clusterIP"):
            new["clusterIPs"] = [new["clusterIP"]]
        else:
            new.pop("clusterIPs", None)


def _has_cluster_ip_type(spec: Obj) -> bool:
    return bool(spec.get("type", "ClusterIP") != "ExternalName")


def _requested(spec: Obj) -> list[str]:
    ips = spec.get("clusterIPs")
    if isinstance(ips, list) and ips:
        return [str(ip) for ip in ips]
    ip = spec.get("clusterIP")
    return [str(ip)] if ip else []


def _go_list(ips: list[Any]) -> str:
    """A ``[]string`` as Go's ``%#v`` prints it (kube's error value)."""
    return "[]string{" + ", ".join(json.dumps(str(ip)) for ip in ips) + "}"


def _cause(field: str, body: str) -> tuple[str, str, str]:
    return (field, "FieldValueInvalid", body)
