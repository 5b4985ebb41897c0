"""``SimulatedKubelet``: moves pods through their phases by rule, running nothing (like KWOK).

One informer watches pods; every pod that is unbound or bound to ``node_name`` and not yet
finished is treated as scheduled here. Its rules (``rules``: kubelet defaults and pod
annotations) decide when it starts, how long it runs, how it exits; its ``restartPolicy``
decides whether it restarts in place. ``podstate.SimPod`` is the state machine; this module
wires it to the informer (events in), the clock (timers) and the ``StatusWriter`` (one status
patch per transition, in order).

Invariants:
- work per pod event is O(1): a dict lookup and at most one timer; there is no polling loop;
- every delay goes through the injected ``Clock`` (``FakeClock`` in tests: no real sleeping);
- the kubelet's own status writes come back as MODIFIED events and trigger nothing;
- a deleted pod is forgotten and never written again; a pod that the API server deletes
  gracefully (``deletionTimestamp`` set, not yet removed) gets a final ``Failed`` status (its
  containers end as on SIGTERM, at once) and then a delete, which a terminal pod passes
  immediately (as kube-apiserver, the embedded server deletes terminal pods without grace).
Neighbours: ``kube.informer`` (events), ``controller.clock`` (time), ``writer``, ``podstate``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from trainop.cluster.kubelet.sim.podstate import SimPod
from trainop.cluster.kubelet.sim.rules import InvalidRule, Rules, rules_for
from trainop.cluster.kubelet.status.render import TERMINAL
from trainop.cluster.kubelet.status.writer import Key, StatusWriter
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.informer import Handlers, Informer, key_of
from trainop.kube.resources import PODS

DEFAULT_NODE = "trainop-sim"
HOST_IP = "127.0.0.1"
DEFAULT_RULES = Rules()


class SimulatedKubelet:
    """A kubelet that simulates pods (see the module docstring)."""

    def __init__(
        self,
        *,
        client: Client,
        clock: Clock,
        node_name: str = DEFAULT_NODE,
        namespace: str | None = None,
        label_selector: str = "",
        defaults: Rules = DEFAULT_RULES,
        max_concurrent_writes: int = 32,
    ) -> None:
        self._clock = clock
        self._node = node_name
        self._defaults = defaults
        self._pods: dict[Key, SimPod] = {}
        self._informer = Informer(
            client,
            PODS,
            namespace=namespace,
            label_selector=label_selector,
            handlers=[Handlers(self._on_change)],
        )
        self.writer = StatusWriter(
            client, clock, is_wanted=self._is_wanted, max_concurrent=max_concurrent_writes
        )

    @property
    def synced(self) -> asyncio.Event:
        """Set once the first list of pods has been handled."""
        return self._informer.synced

    def pod(self, namespace: str, name: str) -> SimPod | None:
        """The simulated state of a pod this kubelet runs, or None."""
        return self._pods.get((namespace, name))

    async def run(self) -> None:
        """Watch and simulate pods until cancelled; then stop every timer and write."""
        try:
            await self._informer.run()
        finally:
            for sim in self._pods.values():
                _cancel_timer(sim)
            self.writer.cancel()

    async def drained(self) -> None:
        """Return once every status write queued so far has been sent."""
        await self.writer.drained()

    def _on_change(self, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            assert old is not None
            self._forget(key_of(old), _uid(old))
            return
        key = key_of(new)
        sim = self._pods.get(key)
        if sim is not None and sim.uid != _uid(new):
            self._forget(key, sim.uid)  # replaced by a new pod of the same name
            sim = None
        if new["metadata"].get("deletionTimestamp"):
            self._terminate(key, sim, new)
        elif sim is None and self._is_mine(new):
            self._admit(key, new)

    def _is_mine(self, pod: Obj) -> bool:
        node = (pod.get("spec") or {}).get("nodeName") or ""
        return node in ("", self._node) and _phase(pod) not in TERMINAL

    def _is_wanted(self, key: Key, uid: str) -> bool:
        sim = self._pods.get(key)
        return sim is not None and sim.uid == uid

    def _forget(self, key: Key, uid: str) -> None:
        sim = self._pods.get(key)
        if sim is not None and sim.uid == uid:
            _cancel_timer(sim)
            del self._pods[key]

    def _admit(self, key: Key, pod: Obj) -> None:
        rules = rules_for(_annotations(pod), self._defaults)
        valid = rules if isinstance(rules, Rules) else self._defaults
        sim = self._pods[key] = _sim_pod(pod, valid, self._now())
        if isinstance(rules, InvalidRule):
            sim.reject(self._now(), rules.message)
            self._write(sim)
        elif _phase(pod) == "Running" or valid.pending_seconds <= 0:
            self._start(sim)  # a Running pod left by an earlier kubelet restarts now
        else:
            self._write(sim)
            self._after(sim, valid.pending_seconds, self._start)

    def _start(self, sim: SimPod) -> None:
        sim.start(self._now())
        self._write(sim)
        self._after(sim, sim.rules.run_seconds, self._exit)

    def _exit(self, sim: SimPod) -> None:
        if not sim.exit(self._now()):
            self._write(sim)
            return
        delay = sim.rules.restart_delay()
        if delay <= 0:
            self._start(sim)  # exit and restart are one transition, one write
            return
        self._write(sim)
        self._after(sim, delay, self._start)

    def _terminate(self, key: Key, sim: SimPod | None, pod: Obj) -> None:
        if sim is None:
            if not self._is_mine(pod):
                return
            sim = self._pods[key] = _sim_pod(pod, self._defaults, self._now())
        if sim.deleting:
            return
        sim.deleting = True
        _cancel_timer(sim)
        if not sim.is_terminal:
            sim.kill(self._now())
            self._write(sim)
        self.writer.delete(key, sim.uid)

    def _after(self, sim: SimPod, delay: float, step: Callable[[SimPod], None]) -> None:
        def fire() -> None:
            sim.timer = None
            if self._pods.get((sim.namespace, sim.name)) is sim and not sim.deleting:
                step(sim)

        sim.timer = self._clock.call_later(delay, fire)

    def _write(self, sim: SimPod) -> None:
        self.writer.patch_status((sim.namespace, sim.name), sim.uid, sim.status())

    def _now(self) -> str:
        return self._clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")


def _sim_pod(pod: Obj, rules: Rules, now: str) -> SimPod:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return SimPod(
        namespace=meta.get("namespace", ""),
        name=meta["name"],
        uid=_uid(pod),
        containers=_names(spec.get("containers")),
        init_containers=_names(spec.get("initContainers")),
        restart_policy=spec.get("restartPolicy") or "Always",
        rules=rules,
        host_ip=HOST_IP,
        scheduled_at=now,
        restart_count=max((int(s.get("restartCount") or 0) for s in statuses), default=0),
    )


def _names(containers: Any) -> tuple[tuple[str, str], ...]:
    return tuple((str(c.get("name")), str(c.get("image") or "")) for c in containers or ())


def _annotations(pod: Obj) -> dict[str, str]:
    return pod["metadata"].get("annotations") or {}


def _uid(pod: Obj) -> str:
    return str(pod["metadata"].get("uid", ""))


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _cancel_timer(sim: SimPod) -> None:
    if sim.timer is not None:
        sim.timer.cancel()
        sim.timer = None
