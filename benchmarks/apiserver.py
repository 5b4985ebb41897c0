"""Benchmark of the embedded API server, driven by the official ``kubernetes`` client.

Measures, in one run against a server subprocess on 127.0.0.1 (so the server has its own
interpreter and GIL, as in real use):

1. pod creates per second, from ``--threads`` client threads in each of ``--procs`` client
   processes (each thread has its own connection pool);
2. watch fan-out: events per second delivered to ``--watchers`` concurrent watchers
   (official ``watch.Watch`` streams in threads of one process) while configmaps are written.

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
from pathlib import Path

import yaml
from kubernetes import client, config, watch

from trainop.cluster.apiserver.http import tls


def start_server(state_dir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """Start ``trainop local apiserver`` and wait for its kubeconfig."""
    kubeconfig = state_dir / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from trainop.cli.main import main; main()",
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


def _raw_worker(kubeconfig: str, prefix: str, count: int, threads: int) -> None:
    cfg = yaml.safe_load(Path(kubeconfig).read_text())
    token = cfg["users"][0]["user"]["token"]
    cluster = cfg["clusters"][0]["cluster"]
    port = int(cluster["server"].rsplit(":", 1)[1])
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    context = tls.client_context(base64.b64decode(cluster["certificate-authority-data"]))

    def run(t: int) -> None:
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=context)
        for i in range(count // threads):
            body = json.dumps(_pod(f"{prefix}-{t}-{i}")).encode()
            conn.request("POST", "/api/v1/namespaces/default/pods", body=body, headers=headers)
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 201, resp.status

    workers = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def bench_creates(
    kubeconfig: Path, *, pods: int, procs: int, threads: int, raw: bool = False
) -> float:
    """Pod creates per second across ``procs`` processes x ``threads`` threads.

    ``raw``: plain ``http.client`` connections instead of the official client, to show what
    the server sustains when the client's own CPU cost is taken out.
    """
    per_proc = pods // procs
    ctx = multiprocessing.get_context("spawn")
    target = _raw_worker if raw else _create_worker
    prefix = ("raw" if raw else "p") + os.urandom(3).hex()
    jobs = [
        ctx.Process(target=target, args=(str(kubeconfig), f"{prefix}{p}", per_proc, threads))
        for p in range(procs)
    ]
    start = time.perf_counter()
    for j in jobs:
        j.start()
    for j in jobs:
        j.join()
    elapsed = time.perf_counter() - start
    done = (per_proc // threads) * threads * procs
    return done / elapsed


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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        proc, kubeconfig = start_server(Path(tmp))
        try:
            creates = bench_creates(
                kubeconfig, pods=args.pods, procs=args.procs, threads=args.threads
            )
            raw = bench_creates(
                kubeconfig, pods=args.pods, procs=args.procs, threads=args.threads, raw=True
            )
            fanout = bench_fanout(kubeconfig, watchers=args.watchers, events=args.events)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(f"| cores | {os.cpu_count()} |")
    print(f"| pod creates/s ({args.procs} procs x {args.threads} threads) | {creates:,.0f} |")
    print(
        f"| pod creates/s, raw http.client ({args.procs} procs x {args.threads} conns) "
        f"| {raw:,.0f} |"
    )
    print(f"| watch events/s delivered to {args.watchers} watchers | {fanout:,.0f} |")


if __name__ == "__main__":
    main()
