"""One container of a pod run until it is done for good: restarts in place and their back-off.

``CrashLoop.run`` takes the container's GPUs (waiting ``ContainerCreating`` while another pod
holds them), then runs it (``podprocesses``) again and again as its pod's ``restartPolicy``
says (``status.restartpolicy``), in place, incrementing ``restartCount``. Before each restart
it backs off (kubelet's CrashLoopBackOff: ``Backoff``, 10 s doubling to 300 s by default,
reset after 10 minutes of running, timed by the injected clock): the container waits
``CrashLoopBackOff`` with kubelet's message and a ``BackOff`` Warning, after a failed start
first showing the start's error (``RunContainerError``, ``CreateContainerError``) for a sync
period. An image that cannot be had is not a run: the container is tried again after the
back-off whatever the policy (``ErrImagePull`` for a sync period, then ``ImagePullBackOff``;
``ErrImageNeverPull`` throughout), as kubelet does. A container an earlier kubelet ran
(``recovery``) starts from what that kubelet recorded; one whose run still goes on under its
supervisor (note 120) is followed to its exit first, then judged by the policy. Stopping the
pod ends every wait.
Neighbours: ``podrun`` (runs one loop per container), ``podprocesses``, ``gpus``.
"""

from __future__ import annotations

import asyncio
import dataclasses

from trainop.cluster.kubelet import gpus, recovery
from trainop.cluster.kubelet.podcontext import PodContext
from trainop.cluster.kubelet.podprocesses import NEVER_PULL, ContainerProcesses
from trainop.cluster.kubelet.podstate import ContainerState
from trainop.cluster.kubelet.runtimes.runtime import Launch, StartError
from trainop.cluster.kubelet.status import restartpolicy

# After a start failed, the container shows kubelet's error reason (RunContainerError,
# CreateContainerError) this long, then CrashLoopBackOff for the rest of the back-off: a
# kubelet shows the error until its next pod sync finds the container backing off.
SYNC_PERIOD = 1.0


class CrashLoop:
    """Runs containers of one pod until done, restarting them (see the module docstring)."""

    def __init__(self, ctx: PodContext, processes: ContainerProcesses, pool: gpus.GpuPool):
        self._ctx, self._processes, self._pool = ctx, processes, pool
        self._policy = restartpolicy.of(ctx.pod.get("spec"))

    def restarts(self, exit_code: int, *, init: bool) -> bool:
        """Whether a container of this pod that exited with ``exit_code`` runs again."""
        return restartpolicy.restarts(self._policy, exit_code, init=init)

    async def run(self, container: ContainerState, launch: Launch, *, init: bool) -> bool:
        """Run until done for good; True when it ended with exit code 0."""
        adopted = self._processes.adopted.pop(container.name, None)
        if adopted is not None:  # still running under its supervisor (note 120)
            code = await self._processes.resume(container, adopted, init=init)
            if self._ctx.is_stopping or not self.restarts(code, init=init):
                return code == 0
        elif container.current is not None:  # recovered from an earlier kubelet
            code = container.current.exit_code
            if not self.restarts(code, init=init):
                return code == 0
            if container.current.reason == recovery.LOST_REASON:
                container.last, container.current = container.current, None  # counted already
        devices = await self._take_gpus(container, launch.gpus)
        if devices is None:
            return False
        try:
            return await self._loop(container, launch, devices, init=init)
        finally:
            self._pool.give_back(devices)

    async def _loop(
        self, container: ContainerState, launch: Launch, devices: list[str], *, init: bool
    ) -> bool:
        ctx, backoff = self._ctx, self._ctx.settings.backoff
        launch = dataclasses.replace(launch, devices=self._pool.present_of(devices))
        env = {**launch.env, **self._pool.variables(devices)}
        failures = pulls = 0
        while not ctx.is_stopping:
            ran = await self._processes.run_once(container, launch, env, init=init)
            if ran is None:  # no image, or refused: nothing ran, no restart policy applies
                pulls += 1
                if await self._pull_backed_off(container, backoff.delay(pulls)):
                    return False
                continue
            code, ran_for = ran
            pulls = 0
            if ctx.is_stopping or not self.restarts(code, init=init):
                return code == 0
            failures = 1 if ran_for > backoff.reset_after else failures + 1
            if await self._crash_backed_off(container, backoff.delay(failures)):
                return False
        return False

    async def _crash_backed_off(self, container: ContainerState, delay: float) -> bool:
        """Wait ``delay`` before restarting ``container`` (CrashLoopBackOff); True when the
        pod was stopped meanwhile."""
        ctx = self._ctx
        start_error = self._processes.start_errors.get(container.name)
        shown = min(SYNC_PERIOD, delay) if start_error else 0.0
        if start_error:  # kubelet's first status after it: the error itself
            container.wait(start_error.waiting, str(start_error))
            ctx.changed()
            if await ctx.backed_off(shown):
                return True
        event = f"Back-off restarting failed container {container.name} in pod {ctx.pod_id}"
        message = (
            f"back-off {delay:g}s restarting failed container={container.name} pod={ctx.pod_id}"
        )
        container.wait("CrashLoopBackOff", message)
        ctx.event(container.name, "Warning", "BackOff", event)
        ctx.changed()
        return await ctx.backed_off(delay - shown)

    async def _pull_backed_off(self, container: ContainerState, delay: float) -> bool:
        """Wait ``delay`` before trying the image again (kubelet's image pull back-off):
        ``ErrImagePull`` for a sync period, then ``ImagePullBackOff``; ``ErrImageNeverPull``
        throughout (that one is not backed off by kubelet, only tried again). True when the
        pod was stopped meanwhile."""
        ctx = self._ctx
        failed: StartError = self._processes.start_errors[container.name]
        if failed.reason == NEVER_PULL or failed.config:
            return await ctx.backed_off(delay)
        shown = min(SYNC_PERIOD, delay)
        if await ctx.backed_off(shown):
            return True
        message = f'Back-off pulling image "{failed.image}"'
        container.wait("ImagePullBackOff", message)
        ctx.event(container.name, "Normal", "BackOff", message)
        ctx.event(container.name, "Warning", "Failed", "Error: ImagePullBackOff")
        ctx.changed()
        return await ctx.backed_off(delay - shown)

    async def _take_gpus(self, container: ContainerState, count: int) -> list[str] | None:
        ctx, pool = self._ctx, self._pool
        while (devices := pool.take(count)) is None:
            free, total = pool.free, len(pool.devices)
            container.wait(
                "ContainerCreating", f"waiting for {count} {gpus.RESOURCE}: {free} of {total} free"
            )
            ctx.changed()
            released = asyncio.ensure_future(pool.released())
            stopped = asyncio.ensure_future(ctx.stopping.wait())
            await asyncio.wait([released, stopped], return_when=asyncio.FIRST_COMPLETED)
            released.cancel()
            stopped.cancel()
            if ctx.is_stopping:
                return None
        return devices
