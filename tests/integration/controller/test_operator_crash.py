"""Crash safety of the operator: SIGKILL ``trainop operator`` at random moments, restart it.

DESIGN section 10: "the operator may crash at any line and, restarted, converge to the same
pods with no duplicates". The method (``docs/design/050-crash-safety.md``):

- the embedded API server runs in this process; a store listener records every committed
  write (ADDED/MODIFIED/DELETED) of pods, services and jobs from the very first one, so the
  history is complete whatever the server's bounded event log keeps;
- the simulated kubelet runs in this process on the real clock; every replica runs a few
  seconds (``sim.trainop.dev/run-seconds``), so kills land while pods are being created,
  while they run and while jobs are being marked Succeeded;
- ``JOBS`` jobs of four kinds (2-4 pods each) are created in ``KILLS`` batches, one batch
  while each incarnation of the operator runs; each incarnation is SIGKILLed at a random
  moment (seeded, the seed is printed; ``TRAINOP_CRASH_SEED`` replays the schedule): during
  start-up (after ``/healthz``, before the caches have synced), or a random time after
  ``/readyz``; then a fresh one starts. Some incarnations get their successor started first
  and are killed only once it is ready too, so two operators reconcile the same jobs for a
  while (no leader election): the window where only deterministic names and AlreadyExists
  keep a slot from getting two pods;
- after the last kill one operator runs to the end: every job must be Succeeded within
  ``CONVERGE_DEADLINE``, and the history must show what ``write_history.check_history``
  states: no two pods or Services live at once for one name or one job/replica type/index,
  every replica slot's pod created exactly once and never deleted, children owned by their
  job, no job lost, deleted or replaced, no Succeeded taken back and no Failed.

Marked ``slow`` (``make test-slow``): 21 operator start-ups take 70-115 s on a 2-core machine.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import queue
import random
import signal
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from tests.integration.cluster.apiserver.conftest import RunningServer, start_server
from tests.integration.controller.operator_process import (
    OperatorProcess,
    api_client,
    custom,
    install_crds,
)
from tests.integration.controller.write_history import History, Slot, check_history, true_conditions
from tests.polling import wait_for
from tests.unit.api.builders import manifest
from trainop.api.kinds import kind_info
from trainop.cluster.kubelet.sim import PREFIX, SimulatedKubelet
from trainop.engine.naming import JOB_NAME_LABEL
from trainop.kube.clock import LoopClock
from trainop.kube.http import HttpClient

pytestmark = pytest.mark.slow

JOBS = 200
KILLS = 20
KINDS = ("PyTorchJob", "JAXJob", "XGBoostJob", "TFJob")
RUN_SECONDS = (2.0, 6.0)  # per job, the same for all its replicas
OVERLAP_SHARE = 0.25  # this share of kills lands while a successor already reconciles too
STARTUP_KILL_SHARE = 0.3  # of the others, this share lands during start-up, before /readyz
STARTUP_KILL_WINDOW = (0.0, 1.0)  # seconds after /healthz
READY_KILL_WINDOW = (0.0, 3.0)  # seconds after /readyz
CONVERGE_DEADLINE = 120.0
OPERATOR_FLAGS = (
    *(arg for kind in KINDS for arg in ("--enable-scheme", kind)),
    "--controller-threads",
    "4",
    "--qps",
    "200",
    "--burst",
    "400",
)

JOB_RESOURCES = frozenset(f"kubeflow.org/{kind_info(kind).plural}" for kind in KINDS)


# ---- the jobs ---------------------------------------------------------------------------


def layout(kind: str, rng: random.Random) -> dict[str, int]:
    """Replica type -> replicas, 2-4 pods in all."""
    if kind in ("PyTorchJob", "XGBoostJob"):
        return {"Master": 1, "Worker": rng.randint(1, 3)}
    return {"Worker": rng.randint(2, 4)}


@dataclass(frozen=True)
class JobPlan:
    kind: str
    name: str
    replicas: dict[str, int]
    run_seconds: float

    @property
    def plural(self) -> str:
        return kind_info(self.kind).plural

    def slots(self) -> set[Slot]:
        return {
            (self.name, rt.lower(), str(i)) for rt, n in self.replicas.items() for i in range(n)
        }

    def manifest(self) -> dict[str, Any]:
        body = manifest(self.kind, name=self.name)
        specs = body["spec"][kind_info(self.kind).replica_specs_field]
        specs.clear()
        for rt, replicas in self.replicas.items():
            template = {
                "metadata": {"annotations": {f"{PREFIX}run-seconds": f"{self.run_seconds:.2f}"}},
                "spec": {"containers": [_container(self.kind)]},
            }
            specs[rt] = {"replicas": replicas, "template": template}
        return body


def _container(kind: str) -> dict[str, Any]:
    return {"name": kind_info(kind).default_container, "image": "python:3.11", "command": ["true"]}


def plan_jobs(rng: random.Random) -> list[JobPlan]:
    plans = []
    for i in range(JOBS):
        kind = KINDS[i % len(KINDS)]
        plans.append(
            JobPlan(
                kind=kind,
                name=f"c{i:03d}-{kind.lower().removesuffix('job')}",
                replicas=layout(kind, rng),
                run_seconds=rng.uniform(*RUN_SECONDS),
            )
        )
    return plans


# ---- the pieces under test ------------------------------------------------------------


class KubeletThread:
    """The simulated kubelet on the real clock, in its own thread and event loop."""

    def __init__(self, kubeconfig: Path) -> None:
        self._kubeconfig = kubeconfig
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._task: asyncio.Task[None] | None = None
        self._synced = threading.Event()

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._begin(), self._loop).result(timeout=10)
        assert self._synced.wait(timeout=30), "the kubelet did not sync"

    async def _begin(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        client = HttpClient.from_kubeconfig(path=str(self._kubeconfig))
        try:
            kubelet = SimulatedKubelet(
                client=client, clock=LoopClock(), label_selector=JOB_NAME_LABEL
            )
            running = asyncio.create_task(kubelet.run())
            await kubelet.synced.wait()
            self._synced.set()
            await running
        finally:
            await client.close()

    def stop(self) -> None:
        async def cancel() -> None:
            if self._task is not None:
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(cancel(), self._loop).result(timeout=30)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        self._loop.close()


class JobCreator:
    """Creates batches of jobs on request, in its own thread, through the official client."""

    def __init__(self, kubeconfig: Path) -> None:
        self._api = api_client(kubeconfig)
        self._batches: queue.Queue[list[JobPlan] | None] = queue.Queue()
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self._done = self._pool.submit(self._work)
        self._finished = False

    def create(self, batch: list[JobPlan]) -> None:
        self._batches.put(batch)

    def finish(self, timeout: float = 60) -> None:
        """Create what is queued, then stop; re-raises the first failure. Idempotent."""
        if self._finished:
            return
        self._finished = True
        self._batches.put(None)
        try:
            self._done.result(timeout=timeout)
        finally:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._api.close()

    def _work(self) -> None:
        jobs = custom(self._api)
        while (batch := self._batches.get()) is not None:
            for plan in batch:
                jobs.create_namespaced_custom_object(
                    "kubeflow.org", "v1", "default", plan.plural, plan.manifest()
                )


# ---- the test -----------------------------------------------------------------------------


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[tuple[RunningServer, History]]:
    history = History(job_resources=JOB_RESOURCES)
    for running in start_server(tmp_path / "apiserver"):
        running.server.state.store.add_listener(history.listen)
        yield running, history


@dataclass
class Kills:
    """Where the kills landed."""

    pods_wanted: int
    at_startup: int = 0
    after_ready: int = 0
    overlapping: int = 0
    with_pods_missing: int = 0
    with_jobs_running: int = 0

    @property
    def total(self) -> int:
        return self.at_startup + self.after_ready


class Incarnations:
    """Every operator process the test started; ``kill_all`` ends those still running."""

    def __init__(self, kubeconfig: Path, log: Path) -> None:
        self.kubeconfig, self._log = kubeconfig, log
        self.started: list[OperatorProcess] = []

    def start(self) -> OperatorProcess:
        operator = OperatorProcess(self.kubeconfig, *OPERATOR_FLAGS, log=self._log)
        self.started.append(operator)
        return operator

    def kill_all(self) -> None:
        for operator in self.started:
            if operator.process.returncode is None:
                operator.stop(signal.SIGKILL)


def kill_at_random(
    operator: OperatorProcess,
    rng: random.Random,
    kills: Kills,
    history: History,
    successor: OperatorProcess | None = None,
) -> None:
    """Let ``operator`` run for a random while, then SIGKILL it and record where it was.

    With a ``successor`` (started just before), both reconcile at once from the successor's
    ``/readyz`` until the kill: two operators without leader election, the case where only
    deterministic names keep a second create of a slot from making a second pod.
    """
    if successor is not None:
        wait_for(lambda: _answers(successor, "/readyz"), timeout=60, what="successor /readyz")
        delay = rng.uniform(*READY_KILL_WINDOW)
        kills.after_ready += 1
        kills.overlapping += 1
    elif rng.random() < STARTUP_KILL_SHARE:
        # /healthz answers once the probes are up, before the caches list: kill in the sync.
        wait_for(lambda: _answers(operator, "/healthz"), timeout=60, what="/healthz")
        delay = rng.uniform(*STARTUP_KILL_WINDOW)
        kills.at_startup += 1
    else:
        wait_for(lambda: _answers(operator, "/readyz"), timeout=60, what="/readyz")
        delay = rng.uniform(*READY_KILL_WINDOW)
        kills.after_ready += 1
    # Not waiting for a state: ``delay`` picks the moment of the kill. An operator that exits
    # on its own meanwhile is a failure.
    try:
        code = operator.process.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        pods, succeeded = history.progress()
        operator.stop(signal.SIGKILL)
        kills.with_pods_missing += pods < kills.pods_wanted
        kills.with_jobs_running += succeeded < JOBS
        return
    raise AssertionError(f"the operator exited by itself with {code}")


def _answers(operator: OperatorProcess, path: str) -> bool:
    assert operator.process.poll() is None, "the operator exited by itself"
    try:
        url = f"http://127.0.0.1:{operator.health_port}{path}"
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def run_with_kills(
    plans: list[JobPlan], incarnations: Incarnations, history: History, rng: random.Random
) -> Kills:
    """Create the jobs batch by batch, one per incarnation, killing each; leave one running."""
    kills = Kills(pods_wanted=sum(len(p.slots()) for p in plans))
    creator = JobCreator(incarnations.kubeconfig)
    try:
        operator = incarnations.start()
        for batch in range(KILLS):
            creator.create(plans[batch * JOBS // KILLS : (batch + 1) * JOBS // KILLS])
            overlap = rng.random() < OVERLAP_SHARE
            successor = incarnations.start() if overlap else None
            kill_at_random(operator, rng, kills, history, successor)
            operator = successor or incarnations.start()
    finally:
        creator.finish()
    return kills


def test_the_operator_killed_at_random_converges_without_duplicates(
    recorded: tuple[RunningServer, History], tmp_path: Path
) -> None:
    started = time.monotonic()
    server, history = recorded
    seed = int(os.environ.get("TRAINOP_CRASH_SEED") or random.SystemRandom().randrange(2**32))
    print(f"operator crash test: seed {seed} (replay with TRAINOP_CRASH_SEED={seed})")
    rng = random.Random(seed)
    plans = plan_jobs(rng)
    api = api_client(server.kubeconfig)
    install_crds(api)
    kubelet = KubeletThread(server.kubeconfig)
    incarnations = Incarnations(server.kubeconfig, tmp_path / "operator.log")
    try:
        kubelet.start()
        kills = run_with_kills(plans, incarnations, history, rng)
        killed_at = time.monotonic()
        wait_for(
            lambda: history.progress()[1] == JOBS,
            timeout=CONVERGE_DEADLINE,
            what=f"all {JOBS} jobs Succeeded (seed {seed})",
        )
        converged = time.monotonic() - killed_at
        [last] = [o for o in incarnations.started if o.process.returncode is None]
        assert last.stop(signal.SIGTERM) == 0, "the last operator did not stop cleanly"
    finally:
        incarnations.kill_all()
        kubelet.stop()
    writes = history.snapshot()
    check_history(
        writes, jobs={p.name for p in plans}, slots=set().union(*(p.slots() for p in plans))
    )
    listed = k8s.CoreV1Api(api).list_namespaced_pod("default", label_selector=JOB_NAME_LABEL)
    assert len(listed.items) == kills.pods_wanted
    served = [
        job
        for plural in {p.plural for p in plans}
        for job in custom(api).list_namespaced_custom_object(
            "kubeflow.org", "v1", "default", plural
        )["items"]
    ]
    assert len(served) == JOBS
    assert all("Succeeded" in true_conditions(job) for job in served)
    api.close()
    assert kills.total == KILLS
    assert kills.with_jobs_running == KILLS, "every kill must land while jobs are unfinished"
    print(
        f"operator crash test: seed {seed}, {JOBS} jobs, {kills.total} SIGKILLs "
        f"({kills.at_startup} during start-up, {kills.after_ready} after ready of which "
        f"{kills.overlapping} with a second operator running; {kills.with_pods_missing} while "
        f"pods were still missing), {len(writes)} pod/Service/job writes checked, converged "
        f"{converged:.1f}s after the last kill, {time.monotonic() - started:.1f}s in all"
    )
