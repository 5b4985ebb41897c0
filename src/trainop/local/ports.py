"""A bounded pool of loopback ports for local jobs' replicas.

Local mode gives every replica a port of its own on ``127.0.0.1`` (note 006). The pool hands
them out from one fixed range — ``TRAINOP_LOCAL_PORTS="lo-hi"``, default ``20000-29999`` — to
*owners* (a job's uid), one port per replica name, and takes them back when the owner releases
them, so a daemon that runs jobs for weeks reuses the same few thousand ports.

Invariants:
- a port belongs to at most one owner; an owner's replica keeps its port until released;
- allocation is all-or-nothing per call and never loops: it scans the range at most once and
  raises ``PortsExhaustedError`` when the range cannot supply the request (the caller reports it and
  retries later); before scanning it refuses outright a request larger than the free count;
- the scan yields to the event loop every ``CHUNK`` probes, so one large job never holds the
  loop shared by the API server, the controller and the kubelet;
- a port another program listens on is skipped (a bind probe), but not remembered: it is
  probed again on the next scan;
- before it hands out or re-claims anything (``load_recorded``, awaited by ``allocate`` and by
  the sources before they claim a job's recorded ports) the pool runs, once, every
  *recorded-ports reader* registered with it: one per kind of job that records ports (v1 jobs,
  TrainJobs), each answering the ports its running jobs recorded, by owner. A restarted daemon
  thus knows every port any running job of any kind uses before it gives one out, whichever
  kind asks first (note 006).

Neighbours: ``local.topology`` and ``local.trainjob_topology`` record the pool's answers on
their jobs, register their readers here, and release the ports when the job finishes, is
suspended or is deleted.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence

from trainop.errors import TrainopError

ENV_RANGE = "TRAINOP_LOCAL_PORTS"
DEFAULT_RANGE = range(20000, 30000)
CHUNK = 256
LOOPBACK = "127.0.0.1"

RecordedPorts = Mapping[str, Mapping[str, int]]
"""Ports that jobs recorded, by owner (a job's uid), then by replica or endpoint name."""
RecordedPortsReader = Callable[[], Awaitable[RecordedPorts]]
"""Reads the ports every running job of one kind recorded (from the API server)."""


class PortsExhaustedError(TrainopError):
    """The pool cannot give an owner the ports it asked for (nothing was allocated)."""


def range_from_env(environ: Mapping[str, str] | None = None) -> range:
    """The range ``TRAINOP_LOCAL_PORTS`` names (``"lo-hi"``, inclusive), else the default.

    A malformed value is an error, not a silent default: a user who set it expects it used.
    """
    text = (os.environ if environ is None else environ).get(ENV_RANGE, "").strip()
    if not text:
        return DEFAULT_RANGE
    lo, sep, hi = text.partition("-")
    try:
        first, last = int(lo), int(hi)
    except ValueError:
        first, last = 0, -1
    if not sep or not 1 <= first <= last <= 65535:
        raise TrainopError(f'{ENV_RANGE}="{text}": expected "LOW-HIGH" within 1-65535')
    return range(first, last + 1)


def is_bindable(port: int) -> bool:
    """Whether nothing on this machine holds ``port`` on the loopback address right now.

    Probed without ``SO_REUSEADDR``: a port whose last connection is still in TIME_WAIT (the
    previous job's master, a minute ago) is not free for programs that bind without it, such
    as XGBoost's tracker."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


class PortPool:
    """Ports of one range, each held by at most one owner (see the module docstring)."""

    def __init__(
        self, *, ports: range | None = None, is_free: Callable[[int], bool] = is_bindable
    ) -> None:
        self.ports = range_from_env() if ports is None else ports
        self._is_free = is_free
        self._owner_of: dict[int, str] = {}
        self._held: dict[str, dict[str, int]] = {}
        self._unread: list[RecordedPortsReader] = []  # readers not run yet
        self._reading = asyncio.Lock()
        # A random first position: two sessions started together (two ``trainop run``) do not
        # hand out the same ports before either job listens on them.
        self._cursor = random.randrange(len(self.ports)) if len(self.ports) else 0

    @property
    def describe(self) -> str:
        """The range as users write it (``20000-29999``)."""
        return f"{self.ports.start}-{self.ports.stop - 1}"

    @property
    def in_use(self) -> int:
        return len(self._owner_of)

    def held(self, owner: str) -> dict[str, int]:
        """The ports ``owner`` holds, by replica name (a copy)."""
        return dict(self._held.get(owner, {}))

    def read_recorded_with(self, reader: RecordedPortsReader) -> None:
        """Run ``reader`` at the next ``load_recorded``, before the pool hands out a port."""
        self._unread.append(reader)

    async def load_recorded(self) -> None:
        """Claim what every registered reader not run yet answers (each reader runs once).

        A reader that raises stays unread: the error reaches the caller, whose allocation
        fails (and is retried), so no port is handed out without every kind's record. A
        recorded port another owner already holds stays that owner's.
        """
        async with self._reading:
            while self._unread:
                for owner, ports in (await self._unread[0]()).items():
                    for name, port in ports.items():
                        self.claim(owner, name, port)
                self._unread.pop(0)

    def claim(self, owner: str, name: str, port: int) -> bool:
        """Give ``owner`` a port it recorded earlier; False when another owner holds it.

        A recorded port outside the range is accepted (the range may have changed since), so
        a running job keeps its addresses across a daemon restart.
        """
        holder = self._owner_of.get(port)
        if holder is not None and holder != owner:
            return False
        previous = self._held.get(owner, {}).get(name)
        if previous is not None and previous != port:
            self._owner_of.pop(previous, None)
        self._owner_of[port] = owner
        self._held.setdefault(owner, {})[name] = port
        return True

    async def allocate(self, owner: str, names: Sequence[str]) -> dict[str, int]:
        """A new port for each of ``names`` (names ``owner`` already holds keep theirs).

        All or nothing: raises ``PortsExhaustedError`` and allocates nothing when the range cannot
        supply them all. First claims what the recorded-ports readers answer (once).
        """
        await self.load_recorded()
        held = self._held.get(owner, {})
        wanted = [n for n in dict.fromkeys(names) if n not in held]
        free = len(self.ports) - sum(1 for p in self._owner_of if p in self.ports)
        if len(wanted) > free:
            raise self._exhausted(len(wanted), free)
        found = await self._scan(len(wanted))
        if len(found) < len(wanted):
            raise self._exhausted(len(wanted), len(found))
        for name, port in zip(wanted, found, strict=True):
            self.claim(owner, name, port)
        return {n: self._held[owner][n] for n in names}

    def release(self, owner: str, names: Sequence[str] | None = None) -> int:
        """Return ``owner``'s ports (only ``names`` when given) to the pool; how many."""
        held = self._held.get(owner, {})
        released = 0
        for name in list(held) if names is None else names:
            port = held.pop(name, None)
            if port is not None:
                self._owner_of.pop(port, None)
                released += 1
        if not held:
            self._held.pop(owner, None)
        return released

    async def _scan(self, count: int) -> list[int]:
        """Up to ``count`` unowned, bindable ports: one pass over the range from the cursor."""
        found: list[int] = []
        size = len(self.ports)
        for step in range(size):
            if len(found) == count:
                break
            if step and step % CHUNK == 0:
                await asyncio.sleep(0)  # let the server, controller and kubelet run
            port = self.ports[(self._cursor + step) % size]
            if port not in self._owner_of and self._is_free(port):
                found.append(port)
        if found:
            self._cursor = (self.ports.index(found[-1]) + 1) % size
        return found

    def _exhausted(self, wanted: int, available: int) -> PortsExhaustedError:
        return PortsExhaustedError(
            f"{wanted} ports needed, {available} free in the local port range {self.describe}"
            f" ({ENV_RANGE})"
        )
