"""Crash safety: SIGKILL a server under concurrent writes, restart it, check the store.

Each round starts ``trainop local apiserver`` as a subprocess on one state directory, lets
four writer threads create configmaps and bump per-thread counters (updates with a
resourceVersion precondition), kills the server with SIGKILL after a random delay, and
restarts it. After every restart:

- every acknowledged create is present and every counter is at least its last acknowledged
  value (nothing acknowledged is lost);
- every object is whole: its ``check`` field matches its name and sequence (no half-write);
- the list resourceVersion is at least every acknowledged one, and new writes get larger
  resourceVersions (monotonic across crashes), counting those of acknowledged Events, which
  are not fsynced and may themselves be lost (kube keeps Events the same way).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests import polling
from tests.integration.cluster.apiserver import rawhttps

ROUNDS = 20
WRITERS = 4
CMS = "/api/v1/namespaces/default/configmaps"
EVENTS = "/api/v1/namespaces/default/events"


def _check(name: str, seq: int) -> str:
    return hashlib.sha256(f"{name}:{seq}".encode()).hexdigest()[:16]


@dataclass
class Acked:
    """What the server acknowledged, across all rounds."""

    created: set[str] = field(default_factory=set)
    counters: dict[str, int] = field(default_factory=dict)
    max_rv: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, body: dict[str, Any]) -> None:
        with self.lock:
            self.max_rv = max(self.max_rv, int(body["metadata"]["resourceVersion"]))


class Server:
    """A server subprocess on ``state_dir``."""

    def __init__(self, state_dir: Path) -> None:
        kubeconfig = state_dir / "kubeconfig"
        kubeconfig.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
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
            ],
            stdout=subprocess.DEVNULL,
        )

        def started() -> bool:
            assert self.proc.poll() is None, "server exited during start-up"
            return kubeconfig.exists()

        polling.wait_for(started, timeout=30, what="the server started", interval=0.02)
        self.endpoint = rawhttps.Endpoint.load(kubeconfig)
        self.token = self.endpoint.token

    def request(
        self,
        conn: http.client.HTTPConnection,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
    ) -> tuple[int, dict[str, Any]]:
        data = json.dumps(body).encode() if body is not None else None
        conn.request(
            method,
            path,
            body=data,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)


def _writer(
    server: Server, acked: Acked, writer: int, round_no: int, stop: threading.Event
) -> None:
    conn = server.endpoint.connect()
    counter = f"counter-{writer}"
    seq = 0
    try:
        while not stop.is_set():
            seq += 1
            name = f"cm-{round_no}-{writer}-{seq}"
            data = {"seq": str(seq), "check": _check(name, seq)}
            code, body = server.request(
                conn, "POST", CMS, {"metadata": {"name": name}, "data": data}
            )
            if code == 201:
                with acked.lock:
                    acked.created.add(name)
                acked.note(body)
            _event(server, conn, acked, name)
            _bump(server, conn, acked, counter)
    except (OSError, http.client.HTTPException):
        return  # the server was killed mid-request: that write is unacknowledged


def _event(server: Server, conn: http.client.HTTPConnection, acked: Acked, name: str) -> None:
    """An Event (volatile: acknowledged without an fsync); only its resourceVersion counts."""
    event = {
        "metadata": {"name": f"{name}.ev"},
        "involvedObject": {"kind": "ConfigMap", "namespace": "default", "name": name},
        "reason": "Written",
        "message": name,
        "type": "Normal",
    }
    code, body = server.request(conn, "POST", EVENTS, event)
    if code == 201:
        acked.note(body)


def _bump(server: Server, conn: http.client.HTTPConnection, acked: Acked, counter: str) -> None:
    code, current = server.request(conn, "GET", f"{CMS}/{counter}")
    if code == 404:
        value, body = 1, {"metadata": {"name": counter}}
    else:
        value, body = int(current["data"]["seq"]) + 1, current
    body["data"] = {"seq": str(value), "check": _check(counter, value)}
    method, path = ("POST", CMS) if code == 404 else ("PUT", f"{CMS}/{counter}")
    code, stored = server.request(conn, method, path, body)
    if code in (200, 201):
        with acked.lock:
            acked.counters[counter] = max(acked.counters.get(counter, 0), value)
        acked.note(stored)


def _verify(server: Server, acked: Acked) -> None:
    conn = server.endpoint.connect()
    code, listing = server.request(conn, "GET", CMS)
    assert code == 200
    items = {i["metadata"]["name"]: i for i in listing["items"]}
    missing = acked.created - items.keys()
    assert not missing, f"acknowledged creates lost: {sorted(missing)[:5]}"
    for name, item in items.items():
        if name.startswith("probe-"):
            continue
        data = item.get("data") or {}
        assert data.get("check") == _check(name, int(data["seq"])), f"half-written {name}"
    for counter, value in acked.counters.items():
        assert int(items[counter]["data"]["seq"]) >= value, f"{counter} went back"
    assert int(listing["metadata"]["resourceVersion"]) >= acked.max_rv
    code, probe = server.request(conn, "POST", CMS, {"metadata": {"generateName": "probe-"}})
    assert code == 201
    assert int(probe["metadata"]["resourceVersion"]) > acked.max_rv
    acked.note(probe)


def test_acknowledged_writes_survive_sigkill(tmp_path: Path) -> None:
    rng = random.Random(4)
    acked = Acked()
    for round_no in range(ROUNDS):
        server = Server(tmp_path)
        if round_no:
            _verify(server, acked)
        stop = threading.Event()
        threads = [
            threading.Thread(target=_writer, args=(server, acked, w, round_no, stop))
            for w in range(WRITERS)
        ]
        for t in threads:
            t.start()
        deadline = time.monotonic() + rng.uniform(0.05, 0.4)
        while time.monotonic() < deadline:
            time.sleep(0.01)  # the crash moment is the point of the test, not a wait
        server.kill()
        stop.set()
        for t in threads:
            t.join(timeout=10)
    final = Server(tmp_path)
    try:
        _verify(final, acked)
        assert len(acked.created) > ROUNDS  # the load really wrote something each round
    finally:
        final.kill()
