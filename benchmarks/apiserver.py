"""Benchmark of the embedded API server, driven by the official ``kubernetes`` client.

Measures, in one run against a server subprocess on 127.0.0.1 (so the server has its own
interpreter and GIL, as in real use):

1. pod creates per second, from ``--threads`` client threads in each of ``--procs`` client
   processes (each thread has its own connection pool);
2. the same with raw ``http.client`` connections, then the two other writes a controller run
   is made of: core/v1 Event creates and pod ``/status`` merge patches (raw clients);
3. watch fan-out: events per second delivered to ``--watchers`` concurrent watchers
   (official ``watch.Watch`` streams in threads of one process) while configmaps are written.

For each write phase it also prints the **server's CPU per write**: utime + stime of the
server process (``/proc/<pid>/stat``) over the phase ÷ the writes made, which, unlike the
rates, does not depend on how busy the clients (or other work on the machine) keep the CPUs.
``--server-profile FILE`` runs the server under cProfile (slower; for the shape).

Usage: ``.venv/bin/python benchmarks/apiserver.py [--pods 3000] [--watchers 50]``.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from kubernetes import client, config, watch

from trainop.cluster.apiserver.http import tls


def start_server(
    state_dir: Path, profile: str | None = None
) -> tuple[subprocess.Popen[bytes], Path]:
    """Start ``trainop local apiserver`` and wait for its kubeconfig."""
    kubeconfig = state_dir / "kubeconfig"
    python = [sys.executable, *(("-m", "cProfile", "-o", profile) if profile else ())]
    proc = subprocess.Popen(
        [
            *python,
            "-m",
            "trainop.cli.main",
            "local",
            "apiserver",
            "--state-dir",
            str(state_dir),
            "--port",
            "0",
            # every run creates pods twice (official and raw clients): above the default
            # ceiling of 4096 pods the server would answer 403 (exceeded quota)
            "--max-pods",
            "1000000",
        ],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not kubeconfig.exists():
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit("server did not start")
        time.sleep(0.05)
    return proc, kubeconfig


def _pod(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "python:3.11",
                    "command": ["python", "-c", "print(1)"],
                    "env": [{"name": f"E{i}", "value": str(i)} for i in range(8)],
                    "ports": [{"containerPort": 23456, "name": "port"}],
                    "resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                }
            ],
            "restartPolicy": "Never",
        },
    }


def server_cpu(pid: int) -> float:
    """CPU seconds (user + system) the process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _event(name: str, n: int) -> dict[str, object]:
    """A core/v1 Event as a controller records one (about 600 bytes)."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{n:016x}", "namespace": "default"},
        "involvedObject": {
            "kind": "Pod",
            "namespace": "default",
            "name": name,
            "uid": "00000000-0000-0000-0000-000000000000",
            "apiVersion": "v1",
        },
        "reason": "SuccessfulCreatePod",
        "message": f"Created pod: {name}",
        "source": {"component": "pytorchjob-controller"},
        "firstTimestamp": "2026-11-27T00:00:00Z",
        "lastTimestamp": "2026-11-27T00:00:00Z",
        "count": 1,
        "type": "Normal",
        "reportingComponent": "pytorchjob-controller",
        "reportingInstance": "",
    }


_RUNNING = {
    "status": {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
        "podIP": "127.0.0.1",
        "startTime": "2026-11-27T00:00:00Z",
    }
}


def _create_worker(kubeconfig: str, prefix: str, count: int, threads: int) -> None:
    def run(t: int) -> None:
        api = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
        for i in range(count // threads):
            resp = api.create_namespaced_pod(
                "default", _pod(f"{prefix}-{t}-{i}"), _preload_content=False
            )
            resp.read()  # read the body so the connection goes back to the pool
            resp.release_conn()

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def _raw_request(kind: str, prefix: str, t: int, i: int) -> tuple[str, str, bytes, str, int]:
    """Method, path, body, content type and expected status of write ``i`` of a raw phase."""
    base = "/api/v1/namespaces/default"
    if kind == "events":
        body = json.dumps(_event(f"{prefix}-{t}", i)).encode()
        return "POST", f"{base}/events", body, "application/json", 201
    if kind == "status":  # the pods the raw pod phase created
        body = json.dumps(_RUNNING).encode()
        path = f"{base}/pods/{prefix}-{t}-{i}/status"
        return "PATCH", path, body, "application/merge-patch+json", 200
    body = json.dumps(_pod(f"{prefix}-{t}-{i}")).encode()
    return "POST", f"{base}/pods", body, "application/json", 201


def _raw_worker(kubeconfig: str, prefix: str, count: int, threads: int, kind: str = "pods") -> None:
    cfg = yaml.safe_load(Path(kubeconfig).read_text())
    token = cfg["users"][0]["user"]["token"]
    cluster = cfg["clusters"][0]["cluster"]
    port = int(cluster["server"].rsplit(":", 1)[1])
    context = tls.client_context(base64.b64decode(cluster["certificate-authority-data"]))

    def run(t: int) -> None:
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=context)
        for i in range(count // threads):
            method, path, body, ctype, code = _raw_request(kind, prefix, t, i)
            headers = {"Authorization": f"Bearer {token}", "Content-Type": ctype}
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            resp.read()
            assert resp.status == code, (resp.status, path)

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


@dataclass(frozen=True, slots=True)
class Phase:
    """One write phase: writes per second and the server's CPU milliseconds per write."""

    rate: float
    cpu_ms: float


def bench_creates(
    kubeconfig: Path,
    *,
    pods: int,
    procs: int,
    threads: int,
    server: int,
    raw: bool = False,
    kind: str = "pods",
    prefix: str = "",
) -> Phase:
    """Writes per second across ``procs`` processes x ``threads`` threads.

    ``raw``: plain ``http.client`` connections instead of the official client, to show what
    the server sustains when the client's own CPU cost is taken out; ``kind`` (raw only):
    ``pods`` creates, ``events`` creates, ``status`` patches of the pods a ``pods`` phase
    with the same ``prefix`` created.
    """
    per_proc = pods // procs
    ctx = multiprocessing.get_context("spawn")
    prefix = prefix or ("raw" if raw else "p") + os.urandom(3).hex()
    jobs = [
        ctx.Process(
            target=_raw_worker if raw else _create_worker,
            args=(str(kubeconfig), f"{prefix}{p}", per_proc, threads, *((kind,) if raw else ())),
        )
        for p in range(procs)
    ]
    cpu = server_cpu(server)
    start = time.perf_counter()
    for j in jobs:
        j.start()
    for j in jobs:
        j.join()
        if j.exitcode != 0:
            raise SystemExit(f"a {kind} client failed (exit {j.exitcode})")
    elapsed = time.perf_counter() - start
    done = (per_proc // threads) * threads * procs
    return Phase(done / elapsed, (server_cpu(server) - cpu) * 1000 / done)


def bench_fanout(kubeconfig: Path, *, watchers: int, events: int) -> float:
    """Events per second delivered in total to ``watchers`` watchers of configmaps."""
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    api = client.CoreV1Api(api_client)
    rv = api.list_namespaced_config_map("default").metadata.resource_version
    received = [0] * watchers
    ready = threading.Barrier(watchers + 1)

    def watcher(i: int) -> None:
        own = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
        ready.wait()
        for _ in watch.Watch().stream(
            own.list_namespaced_config_map,
            "default",
            resource_version=rv,
            timeout_seconds=120,
            _preload_content=False,
        ):
            received[i] += 1
            if received[i] >= events:
                return

    threads = [threading.Thread(target=watcher, args=(i,), daemon=True) for i in range(watchers)]
    for t in threads:
        t.start()
    ready.wait()
    start = time.perf_counter()
    for n in range(events):
        body = {"metadata": {"name": f"fan-{n}"}, "data": {"n": str(n)}}
        api.create_namespaced_config_map("default", body)
    for t in threads:
        t.join(timeout=120)
    elapsed = time.perf_counter() - start
    return sum(received) / elapsed


def main() -> None:
    """Run both benchmarks and print a Markdown table row per figure."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=3000)
    parser.add_argument("--procs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--watchers", type=int, default=50)
    parser.add_argument("--events", type=int, default=400)
    parser.add_argument("--server-profile", default=None, help="cProfile output of the server")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, kubeconfig = start_server(Path(tmp), args.server_profile)
        size = {"pods": args.pods, "procs": args.procs, "threads": args.threads}
        try:
            creates = bench_creates(kubeconfig, server=proc.pid, **size)
            prefix = "raw" + os.urandom(3).hex()
            raw = bench_creates(kubeconfig, server=proc.pid, raw=True, prefix=prefix, **size)
            events = bench_creates(kubeconfig, server=proc.pid, raw=True, kind="events", **size)
            patches = bench_creates(
                kubeconfig, server=proc.pid, raw=True, kind="status", prefix=prefix, **size
            )
            fanout = bench_fanout(kubeconfig, watchers=args.watchers, events=args.events)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    conns = f"({args.procs} procs x {args.threads} conns)"
    print(f"| cores | {os.cpu_count()} |")
    print("| writes | per second | server CPU per write |")
    rows = [
        (f"pod creates, official client ({args.procs} procs x {args.threads} threads)", creates),
        (f"pod creates, raw http.client {conns}", raw),
        (f"Event creates, raw {conns}", events),
        (f"pod status merge patches, raw {conns}", patches),
    ]
    for what, phase in rows:
        print(f"| {what} | {phase.rate:,.0f} | {phase.cpu_ms:.3f} ms |")
    print(f"| watch events/s delivered to {args.watchers} watchers | {fanout:,.0f} | |")


if __name__ == "__main__":
    main()
