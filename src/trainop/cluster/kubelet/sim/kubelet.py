"""``SimulatedKubelet``: moves pods through their phases by rule, running nothing (like KWOK).

The ``shell.KubeletShell`` watches pods; every pod that is unbound or bound to ``node_name``
and not yet finished is treated as scheduled here. Its rules (``rules``: kubelet defaults and
pod annotations) decide when it starts, how long it runs, how it exits; its ``restartPolicy``
decides whether it restarts in place (``status.restartpolicy``). ``podstate.SimPod`` is the
state machine; this module wires it to the shell's calls (admit, terminate, gone), the clock
(timers) and the shell's status writes (one status patch per transition, in order).

Invariants:
- work per pod event is O(1): a dict lookup and at most one timer; there is no polling loop;
- every delay goes through the injected ``Clock`` (``FakeClock`` in tests: no real sleeping);
- the kubelet's own status writes come back as MODIFIED events and trigger nothing;
- a deleted pod is forgotten and never written again; a pod that the API server deletes
  gracefully (``deletionTimestamp`` set, not yet removed) gets a final ``Failed`` status (its
  containers end as on SIGTERM, at once) and then a delete, which a terminal pod passes
  immediately (as kube-apiserver, the embedded server deletes terminal pods without grace).
Neighbours: ``shell`` (events in, status out), ``kube.clock`` (time), ``podstate``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainop.cluster.kubelet.shell import KubeletShell, phase_of, uid_of
from trainop.cluster.kubelet.sim.podstate import SimPod
from trainop.cluster.kubelet.sim.rules import InvalidRule, Rules, rules_for
from trainop.cluster.kubelet.status import restartpolicy
from trainop.cluster.kubelet.status.writer import Key
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock

DEFAULT_NODE = "trainop-sim"
HOST_IP = "127.0.0.1"
DEFAULT_RULES = Rules()


class SimulatedKubelet(KubeletShell):
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
        super().__init__(
            client=client,
            clock=clock,
            node_name=node_name,
            namespace=namespace,
            label_selector=label_selector,
            max_concurrent_writes=max_concurrent_writes,
        )
        self._defaults = defaults
        self._pods: dict[Key, SimPod] = {}

    def pod(self, namespace: str, name: str) -> SimPod | None:
        """The simulated state of a pod this kubelet runs, or None."""
        return self._pods.get((namespace, name))

    async def _setup(self) -> None:
        """Nothing to prepare: nothing runs."""

    async def _shutdown(self) -> None:
        for sim in self._pods.values():
            _cancel_timer(sim)

    def _gone(self, key: Key, uid: str, pod: Obj) -> None:
        sim = self._pods.pop(key, None)
        if sim is not None:
            _cancel_timer(sim)

    def _admit(self, key: Key, pod: Obj) -> None:
        rules = rules_for(_annotations(pod), self._defaults)
        valid = rules if isinstance(rules, Rules) else self._defaults
        sim = self._pods[key] = _sim_pod(pod, valid, self._now())
        if isinstance(rules, InvalidRule):
            sim.reject(self._now(), rules.message)
            self._write_sim(sim)
        elif phase_of(pod) == "Running" or valid.pending_seconds <= 0:
            self._start(sim)  # a Running pod left by an earlier kubelet restarts now
        else:
            self._write_sim(sim)
            self._after(sim, valid.pending_seconds, self._start)

    def _start(self, sim: SimPod) -> None:
        sim.start(self._now())
        self._write_sim(sim)
        self._after(sim, sim.rules.run_seconds, self._exit)

    def _exit(self, sim: SimPod) -> None:
        if not sim.exit(self._now()):
            self._write_sim(sim)
            return
        delay = sim.rules.restart_delay()
        if delay <= 0:
            self._start(sim)  # exit and restart are one transition, one write
            return
        self._write_sim(sim)
        self._after(sim, delay, self._start)

    def _terminate(self, key: Key, pod: Obj) -> None:
        sim = self._pods.get(key)
        if sim is None:
            if not self._adopt(key, pod):
                return
            sim = self._pods[key] = _sim_pod(pod, self._defaults, self._now())
        if sim.deleting:
            return
        sim.deleting = True
        _cancel_timer(sim)
        if not sim.is_terminal:
            sim.kill(self._now())
            self._write_sim(sim)
        self.writer.delete(key, sim.uid)

    def _after(self, sim: SimPod, delay: float, step: Callable[[SimPod], None]) -> None:
        def fire() -> None:
            sim.timer = None
            if self._pods.get((sim.namespace, sim.name)) is sim and not sim.deleting:
                step(sim)

        sim.timer = self._clock.call_later(delay, fire)

    def _write_sim(self, sim: SimPod) -> None:
        self._write((sim.namespace, sim.name), sim.uid, sim.status())


def _sim_pod(pod: Obj, rules: Rules, now: str) -> SimPod:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return SimPod(
        namespace=meta.get("namespace", ""),
        name=meta["name"],
        uid=uid_of(pod),
        containers=_names(spec.get("containers")),
        init_containers=_names(spec.get("initContainers")),
        restart_policy=restartpolicy.of(spec),
        rules=rules,
        host_ip=HOST_IP,
        scheduled_at=now,
        restart_count=max((int(s.get("restartCount") or 0) for s in statuses), default=0),
    )


def _names(containers: Any) -> tuple[tuple[str, str], ...]:
    return tuple((str(c.get("name")), str(c.get("image") or "")) for c in containers or ())


def _annotations(pod: Obj) -> dict[str, str]:
    return pod["metadata"].get("annotations") or {}


def _cancel_timer(sim: SimPod) -> None:
    if sim.timer is not None:
        sim.timer.cancel()
        sim.timer = None
