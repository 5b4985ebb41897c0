"""What the controller benchmark's driver reads while it runs, and its one way to wait.

Role: the measurements and guards of ``benchmarks/controller.py``, apart from its steps:

- processes: CPU (utime + stime from ``/proc/<pid>/stat``) and RSS (``VmRSS``, peak
  ``VmHWM``);
- the operator's metrics: ``trainop_api_requests_total`` (requests by verb and resource) and
  ``rest_client_requests_total`` (answers by code and method): a POST answered with anything
  but 2xx or 409 is a refused create (409 ``AlreadyExists`` is a success to the operator, whose
  cache may be behind its own creates); the server's words for it are in the Warning Event the
  operator records;
- the server: its committed ``resourceVersion``, one counter that every write raises by one,
  so its difference over a phase is the writes the server took from everyone in it;
- watches of the jobs (``Running=True``) and of the operator's pods (phase ``Running``) that
  time each transition with the driver's clock (``time.perf_counter``);
- ``supervise``/``hold`` and the waits built on them (``until_ready``, ``until_quiet``):
  every wait of the benchmark, with a deadline, checking guards (``refusals``: a refused
  create; ``alive``: a process gone) twice a second; a failure raises ``BenchmarkError``
  naming what was awaited and how far it got, or the refusal in the server's own message.

Neighbours: ``benchmarks/controller.py`` (the run and its report).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from trainop.engine.naming import JOB_NAME_LABEL
from trainop.kube import resources
from trainop.kube.http import HttpClient
from trainop.kube.informer import Handlers, Informer

Obj = dict[str, Any]
Guard = Callable[[], Awaitable[None]]
# Seconds between two rounds of guards. Each round reads the operator's /metrics (refused
# creates), which costs the operator a full exposition: 46 ms each under cProfile, 7% of the
# operator's profile when it was read twice a second (docs/benchmarks.md, 2026-11-27).
CHECK_EVERY = 2.0
MESSAGE_WAIT = 10.0  # seconds to wait for the Event that carries a refusal's message


class BenchmarkError(Exception):
    """The run cannot give honest figures; the message says why."""


# ---- processes ------------------------------------------------------------------------


def rss_mb(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of ``pid`` in MB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.split()[0] if value.split() else "0"
    return int(fields["VmRSS"]) / 1024, int(fields["VmHWM"]) / 1024


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU seconds each process spends between ``start`` and ``stop``."""

    def __init__(self, pids: dict[str, int]) -> None:
        self._pids = pids
        self._start: dict[str, float] = {}
        self.spent: dict[str, float] = {}

    def start(self) -> None:
        self._start = {name: cpu_seconds(pid) for name, pid in self._pids.items()}
        self._start["driver"] = time.process_time()

    def stop(self) -> None:
        self.spent = {
            name: cpu_seconds(pid) - self._start[name] for name, pid in self._pids.items()
        }
        self.spent["driver"] = time.process_time() - self._start["driver"]


# ---- the operator's metrics -----------------------------------------------------------


def http_get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return 0, ""


def _samples(metrics_port: int, family_name: str) -> list[Any]:
    _, text = http_get(metrics_port, "/metrics")
    return [
        sample
        for family in text_string_to_metric_families(text)
        if family.name == family_name
        for sample in family.samples
        if sample.name.endswith("_total")
    ]


def api_requests(metrics_port: int) -> Counter[tuple[str, str]]:
    """The operator's API requests so far, by (verb, resource)."""
    counts: Counter[tuple[str, str]] = Counter()
    for sample in _samples(metrics_port, "trainop_api_requests"):
        counts[(sample.labels["verb"], sample.labels["resource"])] = int(sample.value)
    return counts


def post_answers(metrics_port: int) -> Counter[str]:
    """The operator's POSTs so far by the code that answered them (``<error>``: none did)."""
    counts: Counter[str] = Counter()
    for sample in _samples(metrics_port, "rest_client_requests"):
        if sample.labels["method"] == "POST":
            counts[sample.labels["code"]] += int(sample.value)
    return counts


def refused(answers: Counter[str]) -> Counter[str]:
    """The refusals among ``answers``: neither 2xx nor 409 (AlreadyExists: the operator's
    deterministic names make it a success)."""
    return Counter({c: n for c, n in answers.items() if not c.startswith("2") and c != "409"})


async def refusal_messages(client: HttpClient, namespace: str) -> list[str]:
    """The messages of the Warning Events about failed creates (the server's words inside)."""
    deadline = time.monotonic() + MESSAGE_WAIT
    while True:
        events = await client.list(
            resources.EVENTS, namespace=namespace, field_selector="type=Warning"
        )
        found = sorted(
            {str(e.get("message", "")) for e in events.items if "Create" in e.get("reason", "")}
        )
        if found or time.monotonic() > deadline:
            return found
        await asyncio.sleep(0.2)


# ---- the server -----------------------------------------------------------------------


async def committed_writes(client: HttpClient) -> int:
    """The server's newest committed resourceVersion: +1 for every write it took."""
    listing = await client.list(resources.NAMESPACES, limit=1)
    return int(listing.resource_version)


# ---- watches timed with the driver's clock --------------------------------------------


class JobWatcher:
    """Watches the jobs; ``all_running`` is set once every job has ``Running=True``."""

    def __init__(self, client: HttpClient, resource: resources.Resource, jobs: int) -> None:
        self._jobs = jobs
        self.running: set[str] = set()
        self.all_running = asyncio.Event()
        self.done_at = 0.0
        self.informer = Informer(client, resource, handlers=[Handlers(self._on_change)])

    def _on_change(self, old: Obj | None, new: Obj | None) -> None:
        del old
        if new is None or new["metadata"]["name"] in self.running:
            return
        conditions = (new.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Running" and c.get("status") == "True" for c in conditions):
            self.running.add(new["metadata"]["name"])
            if len(self.running) == self._jobs:
                self.done_at = time.perf_counter()
                self.all_running.set()

    def progress(self) -> str:
        return f"{len(self.running)} of {self._jobs} jobs Running"


def _pod_view(pod: Obj) -> Obj:
    """What ``PodWatcher`` keeps of a pod: its key, version, job and phase."""
    meta = pod["metadata"]
    return {
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
            "labels": {JOB_NAME_LABEL: (meta.get("labels") or {}).get(JOB_NAME_LABEL, "")},
        },
        "status": {"phase": (pod.get("status") or {}).get("phase", "")},
    }


class PodWatcher:
    """Watches the operator's pods (``JOB_NAME_LABEL``): ``job_running_at[job]`` is when the
    last of a job's ``pods_per_job`` pods was first seen ``Running`` (driver's clock)."""

    def __init__(self, client: HttpClient, *, jobs: int, pods_per_job: int) -> None:
        self._jobs, self._pods_per_job = jobs, pods_per_job
        self._running: set[str] = set()
        self._per_job: Counter[str] = Counter()
        self.job_running_at: dict[str, float] = {}
        self.all_running = asyncio.Event()
        self.informer = Informer(
            client,
            resources.PODS,
            label_selector=JOB_NAME_LABEL,
            handlers=[Handlers(self._on_change)],
            project=_pod_view,
        )

    def _on_change(self, old: Obj | None, new: Obj | None) -> None:
        del old
        if new is None or new["status"]["phase"] != "Running":
            return
        name = new["metadata"]["name"]
        if name in self._running:
            return
        self._running.add(name)
        job = new["metadata"]["labels"][JOB_NAME_LABEL]
        self._per_job[job] += 1
        if self._per_job[job] == self._pods_per_job:
            self.job_running_at[job] = time.perf_counter()
            if len(self.job_running_at) == self._jobs:
                self.all_running.set()

    def progress(self) -> str:
        expected = self._jobs * self._pods_per_job
        return (
            f"{len(self.informer.items())} of {expected} pods exist, "
            f"{len(self._running)} Running; {len(self.job_running_at)} of {self._jobs} jobs "
            "have all their pods Running"
        )


# ---- waiting --------------------------------------------------------------------------


async def check(guards: Sequence[Guard]) -> None:
    for guard in guards:
        await guard()


async def supervise(
    until: asyncio.Event,
    *,
    what: str,
    limit: float,
    guards: Sequence[Guard],
    progress: Callable[[], str],
) -> None:
    """Wait for ``until``; ``BenchmarkError`` when a guard fails or after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while True:
        await check(guards)
        if until.is_set():
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BenchmarkError(f"gave up after {limit:.0f} s waiting for {what}: {progress()}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(until.wait(), timeout=min(CHECK_EVERY, remaining))


async def hold(seconds: float, *, guards: Sequence[Guard]) -> None:
    """Let ``seconds`` pass, checking ``guards`` all along."""
    deadline = time.monotonic() + seconds
    while (remaining := deadline - time.monotonic()) > 0:
        await check(guards)
        await asyncio.sleep(min(CHECK_EVERY, remaining))
    await check(guards)


def alive(name: str, is_alive: Callable[[], bool], log: Path | None = None) -> Guard:
    """A guard that fails once ``name`` has exited (quoting the end of its ``log``)."""

    async def guard() -> None:
        if not is_alive():
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-10:]) if log else ""
            raise BenchmarkError(
                f"the {name} exited" + (f"; its log ends:\n{tail}" if tail else "")
            )

    return guard


def refusals(client: HttpClient, metrics_port: int, *, namespace: str, log: Path) -> Guard:
    """A guard that fails once the operator has had a create refused, in the server's words."""

    async def guard() -> None:
        bad = refused(await asyncio.to_thread(post_answers, metrics_port))
        if not bad:
            return
        answers = ", ".join(f"{code} x{n}" for code, n in sorted(bad.items()))
        messages = await refusal_messages(client, namespace)
        said = f"no Warning Event said why: see {log}"
        if messages:
            said = messages[0] + (f" (and {len(messages) - 1} more)" if len(messages) > 1 else "")
        raise BenchmarkError(
            f"the operator's creates were refused (POST answered {answers}): {said}"
        )

    return guard


async def until_ready(health_port: int, *, guards: Sequence[Guard], seconds: float) -> None:
    """Wait for the operator's ``/readyz`` (polled every 20 ms)."""
    ready = asyncio.Event()

    async def poll() -> None:
        while (await asyncio.to_thread(http_get, health_port, "/readyz"))[0] != 200:
            await asyncio.sleep(0.02)
        ready.set()

    task = asyncio.create_task(poll())
    try:
        what = "the operator's /readyz"
        await supervise(
            ready, what=what, limit=seconds, guards=guards, progress=lambda: "not ready"
        )
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def until_quiet(
    metrics_port: int, *, guards: Sequence[Guard], seconds: float, quiet: float = 2.0
) -> None:
    """Wait until the operator sends no request for ``quiet`` seconds."""
    deadline = time.monotonic() + seconds
    last = await asyncio.to_thread(api_requests, metrics_port)
    while True:
        await hold(quiet, guards=guards)
        now = await asyncio.to_thread(api_requests, metrics_port)
        if now == last:
            return
        if time.monotonic() > deadline:
            raise BenchmarkError(
                f"the operator still sent requests {seconds:.0f} s after every job was Running: "
                f"{dict(now - last)} in the last {quiet:.0f} s"
            )
        last = now


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile of ``values`` (not empty)."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) * fraction)) - 1]
