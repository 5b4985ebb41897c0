"""The job follower's log readers: one ``pods/log?follow=true`` stream per container instance.

``LogStreams.open_new(pod)`` starts a reader for every container instance of ``pod`` that has
started (its state is ``running`` or ``terminated``) and has no reader yet. An instance is
(pod uid, container name, restartCount): an in-place restart is a new instance with its own
stream, and so is a pod recreated under the same name (a new uid). The log read is the
container's current one, as ``kubectl logs -f``: the follower shows every pod state, and a
restart comes after a back-off (10 s at least), so each instance is current when its reader
opens.

Which containers of a pod are read, and the label their lines carry, the caller decides
(``Choose``). Each reader hands ``Line`` values to ``put`` as they are written, then one
``ENDED`` when its stream ends (the instance stopped, or its pod went away: an API error ends
a stream quietly). ``reading`` counts the readers still open, so the follower can drain them.
Neighbours: ``sdk.follow`` (feeds pod states in, consumes ``put``'s queue).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from trainop import errors
from trainop.kube.client import Obj
from trainop.kube.http import HttpClient

# pod → {container name: label of its lines}, for the containers whose logs are read
Choose = Callable[[Obj], Mapping[str, str]]


@dataclass(frozen=True, slots=True)
class Line:
    """One line written by a followed container instance, under the label ``Choose`` gave."""

    source: str
    text: str


class Ended:
    """The marker a reader hands on when its stream is over."""


ENDED: Final = Ended()
Put = Callable[[Line | Ended], None]


@dataclass(frozen=True, slots=True)
class _Instance:
    pod: str
    namespace: str
    container: str
    label: str


class LogStreams:
    """One reader per container instance of the pods it is shown (``open_new``)."""

    def __init__(self, client: HttpClient, *, choose: Choose, put: Put) -> None:
        self._client = client
        self._choose = choose
        self._put = put
        self._started: set[tuple[str, str, int]] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self.reading = 0

    def open_new(self, pod: Obj) -> None:
        """Start a reader for each started instance of ``pod``'s chosen containers not read yet."""
        meta = pod["metadata"]
        chosen = self._choose(pod)
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            label = chosen.get(status.get("name", ""))
            if label is None:
                continue
            key = (meta["uid"], status["name"], int(status.get("restartCount") or 0))
            started = {"running", "terminated"} & set(status.get("state") or {})
            if started and key not in self._started:
                self._started.add(key)
                namespace = meta.get("namespace", "default")
                instance = _Instance(meta["name"], namespace, status["name"], label)
                self.reading += 1  # counted from now: a drain must not miss a reader not run yet
                self._tasks.append(asyncio.create_task(self._read(instance)))

    async def _read(self, instance: _Instance) -> None:
        try:
            with contextlib.suppress(errors.ApiError):  # the pod went away: its stream just ends
                async for text in self._client.stream_log(
                    name=instance.pod,
                    namespace=instance.namespace,
                    container=instance.container,
                    follow=True,
                ):
                    self._put(Line(instance.label, text))
        finally:
            self.reading -= 1
            self._put(ENDED)

    async def close(self) -> None:
        """Stop every reader still open (their unread output is dropped)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
