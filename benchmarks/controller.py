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
  ``/readyz`` (caches synced, workers starting) until every job has ``Running=True``;
- API writes by the operator (its ``trainop_api_requests_total`` metric) per job;
- GET/LIST calls by the operator during ``--steady-seconds`` once nothing changes any more;
- the operator's RSS (``/proc/<pid>/status``), now and peak.

It prints (a) operator time / baseline time, (b) writes per job / the minimum, (c) steady
GET/LIST, (d) RSS. ``--profile FILE`` runs the operator under cProfile (slower: use it for the
shape, not the figures). Usage: ``.venv/bin/python benchmarks/controller.py [--jobs 1000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml
from prometheus_client.parser import text_string_to_metric_families

from trainop.api import manifest
from trainop.api.kinds import kind_info
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
from trainop.kube.informer import Handlers, Informer

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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_server(state_dir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """``trainop local apiserver`` in its own process; returns it and its kubeconfig."""
    kubeconfig = state_dir / "kubeconfig"
    command = [sys.executable, "-m", "trainop.cli.main", "local", "apiserver"]
    command += ["--state-dir", str(state_dir), "--port", "0"]
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
            raise SystemExit(f"{what} did not start")
        time.sleep(0.02)


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
    client: HttpClient, bodies: Iterable[tuple[resources.Resource, Obj]], *, workers: int
) -> float:
    """Create ``bodies`` with ``workers`` concurrent requests; returns the seconds taken."""
    pending = iter(bodies)

    async def worker() -> None:
        for resource, body in pending:
            await client.create(resource, body, namespace=NAMESPACE)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return time.perf_counter() - started


async def install_crd(client: HttpClient) -> None:
    crd = yaml.safe_load((ROOT / "manifests/crds/pytorchjobs.yaml").read_text())
    await client.create(resources.CRDS, crd)
    deadline = time.monotonic() + 30
    while True:  # the new resource is served once the CRD is established
        try:
            await client.list(JOBS, namespace=NAMESPACE)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


def http_get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError:
        return 0, ""


def api_requests(metrics_port: int) -> Counter[tuple[str, str]]:
    """The operator's API requests so far, by (verb, resource)."""
    counts: Counter[tuple[str, str]] = Counter()
    _, text = http_get(metrics_port, "/metrics")
    for family in text_string_to_metric_families(text):
        if family.name == "trainop_api_requests":
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    key = (sample.labels["verb"], sample.labels["resource"])
                    counts[key] = int(sample.value)
    return counts


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


class RunningWatcher:
    """Watches the jobs; ``all_running`` is set once every job has ``Running=True``."""

    def __init__(self, client: HttpClient, jobs: int) -> None:
        self._jobs = jobs
        self.running: set[str] = set()
        self.all_running = asyncio.Event()
        self.informer = Informer(client, JOBS)
        self.informer.add_handlers(Handlers(self._on_change))

    def _on_change(self, old: Obj | None, new: Obj | None) -> None:
        del old
        if new is None:
            return
        conditions = (new.get("status") or {}).get("conditions") or []
        if any(c.get("type") == "Running" and c.get("status") == "True" for c in conditions):
            self.running.add(new["metadata"]["name"])
            if len(self.running) >= self._jobs:
                self.all_running.set()


async def until_ready(health_port: int, proc: subprocess.Popen[bytes]) -> None:
    while (await asyncio.to_thread(http_get, health_port, "/readyz"))[0] != 200:
        if proc.poll() is not None:
            raise SystemExit("the operator exited; see its log")
        await asyncio.sleep(0.02)


async def until_quiet(metrics_port: int, *, quiet: float = 2.0, limit: float = 120) -> None:
    """Wait until the operator sends no request for ``quiet`` seconds."""
    deadline = time.monotonic() + limit
    last = await asyncio.to_thread(api_requests, metrics_port)
    while time.monotonic() < deadline:
        await asyncio.sleep(quiet)
        now = await asyncio.to_thread(api_requests, metrics_port)
        if now == last:
            return
        last = now


async def run(
    args: argparse.Namespace, kubeconfig: Path, log: Path, pids: dict[str, int]
) -> dict[str, Any]:
    client = HttpClient.from_kubeconfig(path=str(kubeconfig))
    result: dict[str, Any] = {}
    try:
        await install_crd(client)
        bodies = baseline_bodies(args.jobs)
        cpu = result["baseline_cpu"] = CpuMeter(pids)
        cpu.start()
        result["baseline_s"] = await create_all(client, bodies, workers=args.workers)
        cpu.stop()
        jobs = [(JOBS, job_manifest(f"bench-{i:05d}")) for i in range(args.jobs)]
        result["job_creates_s"] = await create_all(client, jobs, workers=args.workers)
        watcher = RunningWatcher(client, args.jobs)
        watch_task = asyncio.create_task(watcher.informer.run())
        await watcher.informer.synced.wait()
        proc, metrics_port, health_port = start_operator(
            kubeconfig, workers=args.workers, log=log, profile=args.profile
        )
        result["pid"] = proc.pid
        try:
            await until_ready(health_port, proc)
            cpu = result["operator_cpu"] = CpuMeter({**pids, "operator": proc.pid})
            cpu.start()
            started = time.perf_counter()
            await asyncio.wait_for(watcher.all_running.wait(), timeout=args.timeout)
            result["operator_s"] = time.perf_counter() - started
            cpu.stop()
            await until_quiet(metrics_port)
            result["writes"] = api_requests(metrics_port)
            await asyncio.sleep(args.steady_seconds)
            result["steady"] = api_requests(metrics_port) - result["writes"]
            result["rss"] = rss_mb(proc.pid)
        finally:
            watch_task.cancel()
            await asyncio.gather(watch_task, return_exceptions=True)
            await asyncio.to_thread(stop, proc)
    finally:
        await client.close()
    return result


def report(args: argparse.Namespace, result: dict[str, Any]) -> None:
    writes: Counter[tuple[str, str]] = result["writes"]
    by_resource = Counter()
    for (verb, resource), n in writes.items():
        if verb in WRITE_VERBS:
            by_resource[f"{verb} {resource}"] += n
    events = sum(n for k, n in by_resource.items() if k.endswith(" events"))
    total = sum(by_resource.values())
    minimum = MIN_OBJECT_WRITES + MIN_STATUS_WRITES
    per_job = (total - events) / args.jobs
    steady = result["steady"]
    reads = sum(n for (verb, _), n in steady.items() if verb in READ_VERBS)
    rss, peak = result["rss"]
    ratio = result["operator_s"] / result["baseline_s"]
    print(f"jobs {args.jobs} x {PODS_PER_JOB} pods, {args.workers} workers, {os.cpu_count()} cpus")
    print(f"baseline: {2 * PODS_PER_JOB * args.jobs} creates in {result['baseline_s']:.2f} s")
    print(f"operator: all jobs Running {result['operator_s']:.2f} s after /readyz")
    for phase in ("baseline", "operator"):
        spent = ", ".join(f"{k} {v:.1f}" for k, v in result[f"{phase}_cpu"].spent.items())
        print(f"CPU seconds during the {phase} phase: {spent}")
    print(f"operator writes by verb and resource: {dict(sorted(by_resource.items()))}")
    print(
        f"API writes/s: bare client {2 * PODS_PER_JOB * args.jobs / result['baseline_s']:.0f}, "
        f"operator {total / result['operator_s']:.0f} (the kubelet adds ~{PODS_PER_JOB} per job)"
    )
    print(f"(a) operator time / bare-client time: {ratio:.2f}")
    print(
        f"(b) writes per job excluding Events / minimum: {per_job:.2f} / {minimum} = "
        f"{per_job / minimum:.3f}  (Events per job: {events / args.jobs:.2f})"
    )
    print(f"(c) GET/LIST during {args.steady_seconds:.0f} s of steady state: {reads}")
    print(
        f"(d) operator RSS: {rss:.0f} MB (peak {peak:.0f} MB) for {PODS_PER_JOB * args.jobs} pods"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument(
        "--workers", type=int, default=4, help="operator workers = baseline concurrency"
    )
    parser.add_argument("--steady-seconds", type=float, default=10.0)
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--profile", default=None, help="cProfile output file for the operator")
    parser.add_argument("--operator-log", default=None, help="keep the operator's log here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trainop-bench-") as tmp:
        state = Path(tmp)
        log = Path(args.operator_log) if args.operator_log else state / "operator.log"
        server, kubeconfig = start_server(state / "server")
        kubelet = multiprocessing.get_context("spawn").Process(
            target=run_kubelet, args=(str(kubeconfig),), daemon=True
        )
        try:
            kubelet.start()
            pids = {"server": server.pid, "kubelet": kubelet.pid or 0}
            result = asyncio.run(run(args, kubeconfig, log, pids))
        finally:
            if kubelet.is_alive():
                kubelet.terminate()
            kubelet.join(timeout=30)
            stop(server)
    report(args, result)


if __name__ == "__main__":
    main()
