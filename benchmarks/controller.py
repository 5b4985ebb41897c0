"""Benchmark of the controller: N PyTorchJobs (1 master + 3 workers) brought to Running.

Three processes besides this driver, all on 127.0.0.1: the embedded API server (``trainop
local apiserver``), the simulated kubelet (a multiprocessing child running
``SimulatedKubelet`` over ``HttpClient``, only for the operator's pods) and the operator
(``trainop operator`` with the webhook off and client-side rate limiting out of the way).
In one run it measures:

- baseline: a bare ``HttpClient`` creates the same pods and services (the bodies the engine
  plans for these jobs, relabelled so neither kubelet nor operator sees them) with
  ``--workers`` concurrent requests — the same concurrency as the operator's workers;
- the operator: jobs are created first, then the operator starts; the time from its
  ``/readyz`` (caches synced, workers starting) until every job has ``Running=True``, and the
  CPU time (utime + stime, ``/proc``) each process spends in it;
- API writes by the operator (its ``trainop_api_requests_total`` metric) per job, and the
  writes the server took in each phase (its resourceVersion, +1 per write);
- GET/LIST calls by the operator during ``--steady-seconds`` once nothing changes any more;
- the operator's RSS (``/proc/<pid>/status``), now and peak;
- per job, the time from its create (when the server answered it) to the driver's pod watch
  seeing the last of its pods ``Running``: both on the driver's clock.

It prints (a) operator time / baseline time, (b) writes per job / the minimum, (c) steady
GET/LIST, (d) RSS, (e) operator CPU per job, (f) peak RSS per 1,000 pods, (g) p50/p99 job
creation to all pods Running, (h) the operator's write rate / the bare client's.

Honesty rules. The server's ceilings are sized to the run: ``--max-pods`` to the pods it
creates (the baseline's and the operator's) plus 10%, ``--max-replicas-per-job`` to a job's
replicas, never below the values given (default: the server's own);
``--exact-ceilings`` passes the given values unchanged. A create refused for any reason ends
the run at once with the server's message: the baseline's and the job creates' errors
directly, the operator's through its ``rest_client_requests_total`` (a POST answered neither
2xx nor 409) and the Warning Event it records with the server's words. Every wait has a
deadline scaled to the run (``--deadline-scale``) and fails naming what it waited for.

``--profile FILE`` runs the operator under cProfile (slower: use it for the shape, not the
figures). Usage: ``.venv/bin/python benchmarks/controller.py [--jobs 1000]``; the helpers it
measures with are in ``controller_probes.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import math
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import controller_probes as probes
import yaml

from trainop import errors
from trainop.api import manifest
from trainop.api.kinds import kind_info
from trainop.cluster.apiserver.admission.limits import (
    DEFAULT_MAX_PODS,
    DEFAULT_MAX_REPLICAS_PER_JOB,
)
from trainop.cluster.kubelet.sim import kubelet as simkubelet
from trainop.cluster.kubelet.sim.rules import Rules
from trainop.engine.actions import Create
from trainop.engine.naming import JOB_NAME_LABEL
from trainop.engine.observed import Observed
from trainop.engine.plan import plan
from trainop.frameworks.registry import framework_for
from trainop.frameworks.topology import ClusterTopology
from trainop.kube import resources
from trainop.kube.clock import LoopClock
from trainop.kube.http import HttpClient

ROOT = Path(__file__).resolve().parents[1]
NAMESPACE = "default"
REPLICAS = {"Master": 1, "Worker": 3}
# The fewest writes that bring one job to Running: its pods and services, plus one status
# write for each condition the job passes through (Created, then Running).
PODS_PER_JOB = sum(REPLICAS.values())
MIN_OBJECT_WRITES = 2 * PODS_PER_JOB
MIN_STATUS_WRITES = 2
WRITE_VERBS = ("create", "update", "patch", "delete")
READ_VERBS = ("get", "list")
Obj = dict[str, Any]
JOBS = resources.job_resource(kind_info("PyTorchJob"))
# Seconds each wait may take: 60 plus this much per job, about ten times what it took on a
# loaded 2-core machine (times --deadline-scale).
SECONDS_PER_JOB = {"baseline": 0.25, "job creates": 0.1, "readyz": 0.05, "running": 0.6}
SECONDS_PER_JOB |= {"pods": 0.1, "quiet": 0.05}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def limit(args: argparse.Namespace, wait: str) -> float:
    """The deadline, in seconds, of one of the run's waits (``SECONDS_PER_JOB``)."""
    return float(args.deadline_scale * (60 + SECONDS_PER_JOB[wait] * args.jobs))


@dataclass(frozen=True, slots=True)
class Ceilings:
    """The server's admission ceilings for this run, and how they were chosen."""

    max_pods: int
    max_replicas_per_job: int
    how: str

    @classmethod
    def for_run(cls, args: argparse.Namespace) -> Ceilings:
        """Sized to the pods the run creates plus 10% (never below what ``args`` gives), or
        exactly as given with ``--exact-ceilings``."""
        pods = 2 * PODS_PER_JOB * args.jobs  # the baseline's and the operator's
        created = f"the run creates {pods} pods, half by the baseline, half by the operator"
        if args.exact_ceilings:
            return cls(args.max_pods, args.max_replicas_per_job, f"as given; {created}")
        max_pods = max(args.max_pods, pods + math.ceil(pods / 10))
        replicas = max(args.max_replicas_per_job, PODS_PER_JOB)
        return cls(max_pods, replicas, f"sized: {created}; given --max-pods {args.max_pods}")

    def flags(self) -> list[str]:
        return [
            *("--max-pods", str(self.max_pods)),
            *("--max-replicas-per-job", str(self.max_replicas_per_job)),
        ]


def start_server(state_dir: Path, ceilings: Ceilings) -> tuple[subprocess.Popen[bytes], Path]:
    """``trainop local apiserver`` in its own process; returns it and its kubeconfig."""
    kubeconfig = state_dir / "kubeconfig"
    command = [sys.executable, "-m", "trainop.cli.main", "local", "apiserver"]
    command += ["--state-dir", str(state_dir), "--port", "0", *ceilings.flags()]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _wait_for(lambda: kubeconfig.exists(), proc, what="API server")
    return proc, kubeconfig


def start_operator(
    kubeconfig: Path, *, workers: int, log: Path, profile: str | None
) -> tuple[subprocess.Popen[bytes], int, int]:
    """``trainop operator`` for PyTorchJobs; returns it, its metrics and its health port."""
    metrics_port, health_port = free_port(), free_port()
    python = [sys.executable]
    if profile:
        python += ["-m", "cProfile", "-o", profile]
    command = [*python, "-m", "trainop.cli.main", "operator", "--kubeconfig", str(kubeconfig)]
    command += ["--enable-scheme", "pytorchjob", "--webhook-server-port", "0"]
    command += ["--controller-threads", str(workers), "--qps", "1e9", "--burst", "1000000"]
    command += ["--metrics-bind-address", f"127.0.0.1:{metrics_port}"]
    command += ["--health-probe-bind-address", f"127.0.0.1:{health_port}"]
    with log.open("ab") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    return proc, metrics_port, health_port


def run_kubelet(kubeconfig: str) -> None:
    """The simulated kubelet's process: the operator's pods start at once and keep running."""

    async def main() -> None:
        client = HttpClient.from_kubeconfig(path=kubeconfig)
        kubelet = simkubelet.SimulatedKubelet(
            client=client,
            clock=LoopClock(),
            label_selector=JOB_NAME_LABEL,
            defaults=Rules(pending_seconds=0.0, run_seconds=86_400.0),
        )
        await kubelet.run()

    asyncio.run(main())


def stop(proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_for(probe: Any, proc: subprocess.Popen[bytes], *, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not probe():
        if time.monotonic() > deadline or proc.poll() is not None:
            raise probes.BenchmarkError(f"{what} did not start within {timeout:.0f} s")
        time.sleep(0.02)


@dataclass(frozen=True, slots=True)
class Processes:
    """The server and the kubelet, which must outlive every phase."""

    server: subprocess.Popen[bytes]
    kubelet: BaseProcess

    def pids(self) -> dict[str, int]:
        return {"server": self.server.pid, "kubelet": self.kubelet.pid or 0}

    def guards(self) -> list[probes.Guard]:
        return [
            probes.alive("API server", lambda: self.server.poll() is None),
            probes.alive("simulated kubelet", self.kubelet.is_alive),
        ]


def job_manifest(name: str) -> Obj:
    def replica(replicas: int) -> Obj:
        container = {"name": "pytorch", "image": "python:3.11", "command": ["python", "-c", "1"]}
        template = {"spec": {"containers": [container]}}
        return {"replicas": replicas, "restartPolicy": "OnFailure", "template": template}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"pytorchReplicaSpecs": {rt: replica(n) for rt, n in REPLICAS.items()}},
    }


def baseline_bodies(jobs: int) -> list[tuple[resources.Resource, Obj]]:
    """The pods and services the engine plans for ``jobs`` fresh jobs, owned by nobody."""
    framework, topology, now = framework_for("PyTorchJob"), ClusterTopology(), datetime.now(UTC)
    bodies: list[tuple[resources.Resource, Obj]] = []
    for i in range(jobs):
        raw = job_manifest(f"base-{i:05d}")
        raw["metadata"]["uid"] = f"00000000-0000-0000-0000-{i:012d}"
        planned = plan(manifest.parse_job(raw), Observed(), framework, topology, now)
        for action in planned.actions:
            if isinstance(action, Create):
                body = copy.deepcopy(action.body)
                meta = body["metadata"]
                meta.pop("ownerReferences", None)
                labels = meta.get("labels") or {}
                labels["bench/job-name"] = labels.pop(JOB_NAME_LABEL, "")
                kind = resources.resource_for(api_version=body["apiVersion"], kind=body["kind"])
                bodies.append((kind, body))
    return bodies


async def create_all(
    client: HttpClient,
    bodies: Sequence[tuple[resources.Resource, Obj]],
    *,
    workers: int,
    who: str,
    seconds: float,
    created_at: dict[str, float] | None = None,
) -> float:
    """Create ``bodies`` with ``workers`` concurrent requests; returns the seconds taken.
    ``probes.BenchmarkError`` at the first refusal (the server's message) or after ``seconds``;
    ``created_at`` gets each name and when its create was answered."""
    pending, done = iter(bodies), [0]

    async def worker() -> None:
        for resource, body in pending:
            await client.create(resource, body, namespace=NAMESPACE)
            done[0] += 1
            if created_at is not None:
                created_at[body["metadata"]["name"]] = time.perf_counter()

    started = time.perf_counter()
    try:
        async with asyncio.timeout(seconds):
            await _all_or_first_error(worker() for _ in range(workers))
    except TimeoutError:
        raise probes.BenchmarkError(
            f"{who}: {done[0]} of {len(bodies)} creates done after {seconds:.0f} s"
        ) from None
    except errors.TrainopError as exc:
        raise probes.BenchmarkError(f"{who}: a create was refused: {exc}") from None
    return time.perf_counter() - started


async def _all_or_first_error(coroutines: Any) -> None:
    """Run ``coroutines`` together; the first error cancels the rest and is raised alone."""
    try:
        async with asyncio.TaskGroup() as group:
            for coroutine in coroutines:
                group.create_task(coroutine)
    except* errors.TrainopError as failed:
        raise failed.exceptions[0] from None


async def install_crd(client: HttpClient) -> None:
    crd = yaml.safe_load((ROOT / "manifests/crds/pytorchjobs.yaml").read_text())
    await client.create(resources.CRDS, crd)
    deadline = time.monotonic() + 30
    while True:  # the new resource is served once the CRD is established
        try:
            await client.list(JOBS, namespace=NAMESPACE)
            return
        except errors.ApiError:
            if time.monotonic() > deadline:
                raise probes.BenchmarkError(
                    "the PyTorchJob CRD was not served within 30 s"
                ) from None
            await asyncio.sleep(0.05)


async def run(
    args: argparse.Namespace, kubeconfig: Path, log: Path, procs: Processes
) -> dict[str, Any]:
    client = HttpClient.from_kubeconfig(path=str(kubeconfig))
    result: dict[str, Any] = {}
    try:
        await install_crd(client)
        await baseline_phase(args, client, procs, result)
        jobs_watch = probes.JobWatcher(client, JOBS, args.jobs)
        pods_watch = probes.PodWatcher(client, jobs=args.jobs, pods_per_job=PODS_PER_JOB)
        watches = [asyncio.create_task(w.informer.run()) for w in (jobs_watch, pods_watch)]
        try:
            for watch in (jobs_watch, pods_watch):
                await probes.supervise(
                    watch.informer.synced,
                    what=f"the driver's watch of {watch.informer.resource.plural} to sync",
                    limit=60,
                    guards=procs.guards(),
                    progress=lambda: "not synced",
                )
            await operator_phase(
                args, client, (jobs_watch, pods_watch), kubeconfig, log, procs, result
            )
        finally:
            for task in watches:
                task.cancel()
            await asyncio.gather(*watches, return_exceptions=True)
    finally:
        await client.close()
    return result


async def baseline_phase(
    args: argparse.Namespace, client: HttpClient, procs: Processes, result: dict[str, Any]
) -> None:
    """The bare client creates the operator's pods and services: time, CPU, server writes."""
    bodies = baseline_bodies(args.jobs)
    writes_before = await probes.committed_writes(client)
    cpu = result["baseline_cpu"] = probes.CpuMeter(procs.pids())
    cpu.start()
    result["baseline_s"] = await create_all(
        client,
        bodies,
        workers=args.workers,
        who="the baseline client",
        seconds=limit(args, "baseline"),
    )
    cpu.stop()
    result["baseline_creates"] = len(bodies)
    result["baseline_server_writes"] = await probes.committed_writes(client) - writes_before


async def operator_phase(
    args: argparse.Namespace,
    client: HttpClient,
    watches: tuple[probes.JobWatcher, probes.PodWatcher],
    kubeconfig: Path,
    log: Path,
    procs: Processes,
    result: dict[str, Any],
) -> None:
    """Create the jobs, start the operator and measure it until it is quiet and idle."""
    jobs = [(JOBS, job_manifest(f"bench-{i:05d}")) for i in range(args.jobs)]
    created_at: dict[str, float] = {}
    result["job_creates_s"] = await create_all(
        client,
        jobs,
        workers=args.workers,
        who="the job creates",
        seconds=limit(args, "job creates"),
        created_at=created_at,
    )
    result["created_at"] = created_at
    proc, metrics_port, health_port = start_operator(
        kubeconfig, workers=args.workers, log=log, profile=args.profile
    )
    result["pid"] = proc.pid
    guards = [
        *procs.guards(),
        probes.alive("operator", lambda: proc.poll() is None, log),
        probes.refusals(client, metrics_port, namespace=NAMESPACE, log=log),
    ]
    try:
        await probes.until_ready(health_port, guards=guards, seconds=limit(args, "readyz"))
        pids = {**procs.pids(), "operator": proc.pid}
        await measure_operator(args, client, watches, pids, metrics_port, guards, result)
    finally:
        await asyncio.to_thread(stop, proc)


async def measure_operator(
    args: argparse.Namespace,
    client: HttpClient,
    watches: tuple[probes.JobWatcher, probes.PodWatcher],
    pids: dict[str, int],
    metrics_port: int,
    guards: Sequence[probes.Guard],
    result: dict[str, Any],
) -> None:
    """From ``/readyz``: every job Running (time, CPU, writes), then quiet, steady and RSS."""
    jobs_watch, pods_watch = watches
    pid = pids["operator"]
    ready_at = result["ready_at"] = time.perf_counter()
    result["rss_at_ready"] = probes.rss_mb(pid)[0]
    writes_before = await probes.committed_writes(client)
    cpu = result["operator_cpu"] = probes.CpuMeter(pids)
    cpu.start()
    await probes.supervise(
        jobs_watch.all_running,
        what="every job to be Running",
        limit=limit(args, "running"),
        guards=guards,
        progress=lambda: f"{jobs_watch.progress()}; {pods_watch.progress()}",
    )
    cpu.stop()
    result["operator_s"] = jobs_watch.done_at - ready_at
    result["phase_server_writes"] = await probes.committed_writes(client) - writes_before
    result["phase_writes"] = await asyncio.to_thread(probes.api_requests, metrics_port)
    result["operator_cpu_since_start"] = probes.cpu_seconds(pid)
    await probes.supervise(
        pods_watch.all_running,
        what="every job's pods to be Running",
        limit=limit(args, "pods"),
        guards=guards,
        progress=pods_watch.progress,
    )
    result["pods_running_at"] = pods_watch.job_running_at
    await probes.until_quiet(metrics_port, guards=guards, seconds=limit(args, "quiet"))
    result["writes"] = await asyncio.to_thread(probes.api_requests, metrics_port)
    result["already_existed"] = (await asyncio.to_thread(probes.post_answers, metrics_port))["409"]
    await probes.hold(args.steady_seconds, guards=guards)
    result["steady"] = await asyncio.to_thread(probes.api_requests, metrics_port) - result["writes"]
    result["rss"] = probes.rss_mb(pid)


def report(args: argparse.Namespace, result: dict[str, Any], ceilings: Ceilings) -> None:
    print(f"jobs {args.jobs} x {PODS_PER_JOB} pods, {args.workers} workers, {os.cpu_count()} cpus")
    print(f"server ceilings: {' '.join(ceilings.flags())} ({ceilings.how})")
    print(f"baseline: {result['baseline_creates']} creates in {result['baseline_s']:.2f} s")
    print(f"operator: all jobs Running {result['operator_s']:.2f} s after /readyz")
    for phase in ("baseline", "operator"):
        spent = ", ".join(f"{k} {v:.1f}" for k, v in result[f"{phase}_cpu"].spent.items())
        print(f"CPU seconds during the {phase} phase: {spent}")
    writes = writes_by_resource(result["writes"])
    print(f"operator writes by verb and resource: {dict(sorted(writes.items()))}")
    already = result["already_existed"]
    print(f"operator creates answered 409 AlreadyExists (its cache was behind): {already}")
    report_ratios(args, result, writes)
    report_costs(args, result)
    report_latency(result)
    report_write_rates(result)


def writes_by_resource(requests: Counter[tuple[str, str]]) -> Counter[str]:
    by_resource: Counter[str] = Counter()
    for (verb, resource), n in requests.items():
        if verb in WRITE_VERBS:
            by_resource[f"{verb} {resource}"] += n
    return by_resource


def report_ratios(args: argparse.Namespace, result: dict[str, Any], writes: Counter[str]) -> None:
    """(a) to (d), the figures the benchmark always printed."""
    events = sum(n for k, n in writes.items() if k.endswith(" events"))
    minimum = MIN_OBJECT_WRITES + MIN_STATUS_WRITES
    per_job = (sum(writes.values()) - events) / args.jobs
    reads = sum(n for (verb, _), n in result["steady"].items() if verb in READ_VERBS)
    rss, peak = result["rss"]
    print(
        f"(a) operator time / bare-client time: {result['operator_s'] / result['baseline_s']:.2f}"
    )
    print(
        f"(b) writes per job excluding Events / minimum: {per_job:.2f} / {minimum} = "
        f"{per_job / minimum:.3f}  (Events per job: {events / args.jobs:.2f})"
    )
    print(f"(c) GET/LIST during {args.steady_seconds:.0f} s of steady state: {reads}")
    print(
        f"(d) operator RSS: {rss:.0f} MB (peak {peak:.0f} MB) for {PODS_PER_JOB * args.jobs} pods"
    )


def report_costs(args: argparse.Namespace, result: dict[str, Any]) -> None:
    """(e) operator CPU per job and (f) peak RSS per 1,000 pods."""
    phase = result["operator_cpu"].spent["operator"]
    print(
        f"(e) operator CPU per job: {1000 * phase / args.jobs:.1f} ms ({phase:.1f} s utime+stime "
        f"over the operator phase; {result['operator_cpu_since_start']:.1f} s since it started)"
    )
    pods, peak, ready = PODS_PER_JOB * args.jobs, result["rss"][1], result["rss_at_ready"]
    print(
        f"(f) operator RSS per 1,000 pods: {1000 * peak / pods:.1f} MB (peak {peak:.0f} MB / "
        f"{pods} pods, the whole process); {1000 * (peak - ready) / pods:.1f} MB above its "
        f"{ready:.0f} MB at /readyz (jobs cached, no pods yet)"
    )


def report_latency(result: dict[str, Any]) -> None:
    """(g) p50/p99 from each job's create to all its pods Running, on the driver's clock."""
    created, running = result["created_at"], result["pods_running_at"]
    from_create = [running[job] - created[job] for job in created]
    from_ready = [running[job] - result["ready_at"] for job in created]
    print(
        "(g) job create to all its pods Running (driver's clock: create answered -> pod watch "
        f"saw the last Running): p50 {probes.percentile(from_create, 0.5):.2f} s, "
        f"p99 {probes.percentile(from_create, 0.99):.2f} s; from the operator's /readyz "
        f"(jobs were created before it started): p50 {probes.percentile(from_ready, 0.5):.2f} s, "
        f"p99 {probes.percentile(from_ready, 0.99):.2f} s"
    )


def report_write_rates(result: dict[str, Any]) -> None:
    """(h) the operator's write rate / the bare client's, and the server's in both phases."""
    bare = result["baseline_creates"] / result["baseline_s"]
    operator = sum(writes_by_resource(result["phase_writes"]).values()) / result["operator_s"]
    server_bare = result["baseline_server_writes"] / result["baseline_s"]
    server_operator = result["phase_server_writes"] / result["operator_s"]
    print(
        f"(h) write rate, operator / bare client: {operator / bare:.2f} ({operator:.0f} writes/s "
        f"incl. Events over the operator phase / {bare:.0f} creates/s); the server took "
        f"{server_operator:.0f} writes/s in the operator phase (operator + kubelet) and "
        f"{server_bare:.0f}/s in the baseline: {server_operator / server_bare:.2f}"
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument(
        "--workers", type=int, default=4, help="operator workers = baseline concurrency"
    )
    parser.add_argument("--steady-seconds", type=float, default=10.0)
    parser.add_argument(
        "--max-pods",
        type=int,
        default=DEFAULT_MAX_PODS,
        help="the server's pod ceiling, raised to the run's pods + 10%% (default: the server's)",
    )
    parser.add_argument(
        "--max-replicas-per-job",
        type=int,
        default=DEFAULT_MAX_REPLICAS_PER_JOB,
        help="the server's replica ceiling, raised to a job's replicas (default: the server's)",
    )
    parser.add_argument(
        "--exact-ceilings", action="store_true", help="pass the ceilings as given, not sized"
    )
    parser.add_argument(
        "--deadline-scale", type=float, default=1.0, help="multiply every wait's deadline"
    )
    parser.add_argument("--profile", default=None, help="cProfile output file for the operator")
    parser.add_argument("--operator-log", default=None, help="keep the operator's log here")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    ceilings = Ceilings.for_run(args)
    started = time.perf_counter()
    try:
        result = run_processes(args, ceilings)
    except probes.BenchmarkError as exc:
        raise SystemExit(f"controller benchmark failed: {exc}") from None
    report(args, result, ceilings)
    print(f"wall time: {time.perf_counter() - started:.1f} s (the whole run)")


def run_processes(args: argparse.Namespace, ceilings: Ceilings) -> dict[str, Any]:
    """Start the server and the kubelet, run the phases, stop everything."""
    with tempfile.TemporaryDirectory(prefix="trainop-bench-") as tmp:
        state = Path(tmp)
        log = Path(args.operator_log) if args.operator_log else state / "operator.log"
        server, kubeconfig = start_server(state / "server", ceilings)
        kubelet = multiprocessing.get_context("spawn").Process(
            target=run_kubelet, args=(str(kubeconfig),), daemon=True
        )
        try:
            kubelet.start()
            return asyncio.run(run(args, kubeconfig, log, Processes(server, kubelet)))
        finally:
            if kubelet.is_alive():
                kubelet.terminate()
            kubelet.join(timeout=30)
            stop(server)


if __name__ == "__main__":
    main()
