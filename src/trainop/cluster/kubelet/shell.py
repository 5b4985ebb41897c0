"""What both local kubelets do around their pods: watch, decide which are theirs, write status.

``KubeletShell`` is the base of the process kubelet (``kubelet.Kubelet``) and the simulated
one (``sim.kubelet.SimulatedKubelet``). One informer watches pods; every change becomes one of
three calls that the subclass makes real:

- ``_admit(key, pod)``: a pod of this node seen for the first time; ``_is_mine``: bound to
  ``node_name`` (or, unless ``require_binding``, not bound yet) and not finished. Its uid is
  tracked from then on;
- ``_terminate(key, pod)``: the API server is deleting the pod gracefully
  (``deletionTimestamp`` set), tracked or not; ``_adopt`` tracks one that nothing runs yet;
- ``_gone(key, uid, pod)``: the tracked pod was removed, or replaced by a new pod of the same
  name (another uid). Called once per uid, once it is no longer tracked.

Status goes through one ``status.writer.StatusWriter``: ``_write`` queues a status now (one per
transition); ``_mark_changed`` coalesces a pod's changes into one write per loop turn, skipped
when equal to the last one written (``_render`` supplies it). Writes carry the pod's uid and
are dropped once that uid is no longer tracked (``_is_wanted``), so a pod that is gone is
never written again. ``run`` calls ``_setup``, watches until cancelled, then calls
``_shutdown`` and stops writing. Invariant: work per pod event is a few dict lookups (the
simulated kubelet runs 10,000 pods). Neighbours: ``kube.informer``, ``status.writer``, the
two kubelets.
"""

from __future__ import annotations

import abc
import asyncio
from typing import Any

from trainop.cluster.kubelet.status.render import TERMINAL
from trainop.cluster.kubelet.status.writer import Key, StatusWriter
from trainop.kube.client import Client, Obj
from trainop.kube.clock import Clock
from trainop.kube.informer import Handlers, Informer, key_of
from trainop.kube.resources import PODS


class KubeletShell(abc.ABC):
    """The informer, dispatch and status writing of a kubelet (see the module docstring)."""

    def __init__(
        self,
        *,
        client: Client,
        clock: Clock,
        node_name: str,
        namespace: str | None = None,
        label_selector: str = "",
        require_binding: bool = False,
        max_concurrent_writes: int = 32,
    ) -> None:
        self._clock = clock
        self._node_name = node_name
        self._require_binding = require_binding
        self._uids: dict[Key, str] = {}  # the pods this kubelet tracks
        self._dirty: set[Key] = set()
        self._written: dict[Key, dict[str, Any]] = {}
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

    async def run(self) -> None:
        """Watch pods until cancelled; then ``_shutdown`` and stop writing."""
        await self._setup()
        try:
            await self._informer.run()
        finally:
            await self._shutdown()
            self.writer.cancel()

    async def drained(self) -> None:
        """Return once every status write queued so far has been sent."""
        await asyncio.sleep(0)  # let this turn's changed pods be flushed
        await self.writer.drained()

    # --- what a kubelet makes real --------------------------------------------------------

    @abc.abstractmethod
    async def _setup(self) -> None:
        """Before the first pod: what the kubelet needs to run pods."""

    @abc.abstractmethod
    def _admit(self, key: Key, pod: Obj) -> None:
        """Run a pod of this node (already tracked)."""

    @abc.abstractmethod
    def _terminate(self, key: Key, pod: Obj) -> None:
        """The pod is being deleted gracefully: stop it, write its last status, delete it."""

    @abc.abstractmethod
    def _gone(self, key: Key, uid: str, pod: Obj) -> None:
        """The tracked pod ``uid`` was removed or replaced: drop it (it is untracked)."""

    @abc.abstractmethod
    async def _shutdown(self) -> None:
        """The kubelet stops: stop every pod; nothing is written after this."""

    def _render(self, key: Key) -> tuple[str, dict[str, Any]] | None:
        """The uid and status of a changed pod (``_mark_changed``), None if not running."""
        del key
        return None

    # --- dispatch -------------------------------------------------------------------------

    def _on_change(self, old: Obj | None, new: Obj | None) -> None:
        if new is None:
            assert old is not None
            self._untrack(key_of(old), uid_of(old), old)
            return
        key = key_of(new)
        known = self._uids.get(key)
        if known is not None and known != uid_of(new):
            self._untrack(key, known, new)  # replaced by a new pod of the same name
            known = None
        if new["metadata"].get("deletionTimestamp"):
            self._terminate(key, new)
        elif known is None and self._is_mine(new):
            self._uids[key] = uid_of(new)
            self._admit(key, new)

    def _is_mine(self, pod: Obj) -> bool:
        node = (pod.get("spec") or {}).get("nodeName") or ""
        if node != self._node_name and (node or self._require_binding):
            return False
        return phase_of(pod) not in TERMINAL

    def _is_wanted(self, key: Key, uid: str) -> bool:
        return self._uids.get(key) == uid

    def _adopt(self, key: Key, pod: Obj) -> bool:
        """Track a pod of this node that is being deleted and that nothing runs (left by an
        earlier kubelet); False when it is not this node's or is tracked already."""
        if key in self._uids or not self._is_mine(pod):
            return False
        self._uids[key] = uid_of(pod)
        return True

    def _untrack(self, key: Key, uid: str, pod: Obj) -> None:
        if self._uids.get(key) != uid:
            return
        del self._uids[key]
        self._written.pop(key, None)
        self._gone(key, uid, pod)

    # --- status ---------------------------------------------------------------------------

    def _write(self, key: Key, uid: str, status: dict[str, Any]) -> None:
        self.writer.patch_status(key, uid, status)

    def _mark_changed(self, key: Key) -> None:
        if key not in self._dirty:
            self._dirty.add(key)
            asyncio.get_running_loop().call_soon(self._flush, key)

    def _flush(self, key: Key) -> None:
        self._dirty.discard(key)
        rendered = self._render(key)
        if rendered is None:
            return
        uid, status = rendered
        if status != self._written.get(key):
            self._written[key] = status
            self._write(key, uid, status)

    def _now(self) -> str:
        return self._clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")


def uid_of(pod: Obj) -> str:
    """The pod's uid ("" when it has none)."""
    return str(pod["metadata"].get("uid", ""))


def phase_of(pod: Obj) -> str:
    """The pod's phase as last written (``Pending`` when it has none)."""
    return str((pod.get("status") or {}).get("phase") or "Pending")
