"""The container runtime's removals, off the pods' path (``containers``, note 095; issue 24
item 5): a pod's ended containers and its holder go in one runtime call, in the background,
once the pod is released.

Removing a container costs its runtime call (~0.2 s), removing a holder more (~0.4 s: its
network namespace is torn down); made one after the other at each container's end and at the
pod's release they delayed the pod's ``Succeeded`` (so the job's, so ``trainop run``'s exit)
by ~0.7 s for nothing a pod's status needs: the exit code is inspected before. So a container's
``finish`` only notes it (``ended``), and ``release`` removes the pod's noted containers and its
holder with one call (podman's ``rm --depend``, which removes dependents first: in one plain
``rm`` the holder would race its containers and fail) in a task of its own. ``settled`` waits
for the removal of a name before the name is run again (a restart, a pod of the same name);
``drain`` waits for every removal (the runtime's ``close``, before it lists what is left).
Where the one call fails, each container and then the holder is removed on its own.
"""

from __future__ import annotations

import asyncio
import logging

from trainop.cluster.kubelet.runtimes import containercli

log = logging.getLogger(__name__)


class Removals:
    """Pods' ended containers and holders, removed in the background (module docstring)."""

    def __init__(self, cli: containercli.Cli) -> None:
        self._cli = cli
        self._ended: dict[str, list[str]] = {}  # pod uid -> its ended containers' names
        self._running: dict[asyncio.Task[None], frozenset[str]] = {}  # removal -> names

    def ended(self, uid: str, name: str) -> None:
        """The container ``name`` of the pod ``uid`` has ended: removed with the pod."""
        names = self._ended.setdefault(uid, [])
        if name not in names:
            names.append(name)

    def release(self, uid: str, holder: str = "") -> None:
        """The pod ``uid`` has ended: remove its ended containers and ``holder`` ("" for
        none) in the background."""
        names = self._ended.pop(uid, [])
        if not names and not holder:
            return
        task = asyncio.get_running_loop().create_task(self._remove(holder, names))
        self._running[task] = frozenset([*names, holder])
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._running.pop(task, None)

    async def settled(self, name: str) -> None:
        """Until no removal of ``name`` is under way (before a run reuses the name)."""
        waiting = [task for task, names in self._running.items() if name in names]
        if waiting:
            await asyncio.wait(waiting)

    async def drain(self) -> None:
        """Until every removal started so far has ended."""
        while self._running:
            await asyncio.wait(list(self._running))

    async def _remove(self, holder: str, names: list[str]) -> None:
        reply = await self._cli.call(*self._cli.remove_pod_words(holder, names))
        if reply.code == 0:
            return
        log.debug("removing %s at once failed (%s): one by one", names, reply.last_line)
        for name in [*names, *([holder] if holder else [])]:
            await self._cli.call(*self._cli.remove_words(name))
