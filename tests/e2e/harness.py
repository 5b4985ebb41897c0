"""Standalone e2e harness: run one example manifest's replicas as local processes.

TEMPORARY SCAFFOLDING until ``trainop run`` (the process kubelet) exists; then the e2e tests
run the same manifests through ``trainop run`` and this module goes. Keep it small.

What it does, for a manifest: the real engine (``trainop.engine.plan``) plans the job with a
local-style topology (host ``127.0.0.1``, one free port per replica), exactly as the operator
would; each planned pod's containers start as processes (argv, no shell) with the pod's env
resolved (``value``, ``fieldRef`` ``status.podIP``/``metadata.name``/``metadata.namespace``,
``$(VAR)`` expansion), working directory = the repository root (or ``workingDir``), ``PATH``
led by the Python environment's ``bin`` and ``PYTHONPATH`` = the repository root.

Deliberate simplifications (the kubelet will do these properly): init containers are skipped
(``init-pytorch`` only waits for DNS); ConfigMap volumes are written to a per-pod sandbox and
env values under their ``mountPath`` point there; MPI's ``kubexec.sh`` (``kubectl exec``) is
replaced by a local rsh agent that runs the command with ``sh -c``; containers whose command is
``sleep`` (idle MPI workers) are not waited for; a failed replica is restarted in place per its
replica ``restartPolicy`` (engine's ``policies.is_retryable``), and a final failure fails the job.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trainop.api import manifest
from trainop.api.types import Job
from trainop.engine import naming, policies
from trainop.engine.actions import Create
from trainop.engine.observed import Observed
from trainop.engine.plan import plan
from trainop.frameworks.registry import framework_for

ROOT = Path(__file__).resolve().parents[2]
# Stands in for kubexec.sh (``kubectl exec <pod> -- sh -c ...``): ignore the pod, run here.
LOCAL_RSH_AGENT = '#!/bin/sh\nshift\nexec /bin/sh -c "$*"\n'
MAX_RESTARTS = 3


@dataclass(frozen=True, slots=True)
class LocalTopology:
    """Every replica at ``127.0.0.1`` on its own port (implements ``frameworks.topology``)."""

    ports: Mapping[tuple[str, int], int]

    def host(self, *, job: Job, replica_type: str, index: int, qualified: bool = False) -> str:
        del job, replica_type, index, qualified
        return "127.0.0.1"

    def port(self, *, job: Job, replica_type: str, index: int) -> int:
        del job
        return self.ports[(replica_type, index)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def load(path: Path) -> Job:
    (document,) = manifest.parse_documents(path.read_text(), source=str(path))
    return manifest.load_job(document, source=str(path))


def planned_objects(job: Job) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(pods, config maps) of the first plan for ``job`` on a fresh local topology."""
    ports = {
        (rt, i): free_port()
        for rt, spec in job.spec.replica_specs.items()
        for i in range(1 if spec.replicas is None else spec.replicas)
    }
    framework = framework_for(job.kind)
    result = plan(job, Observed(), framework, LocalTopology(ports), datetime.now(UTC))
    bodies = [a.body for a in result.actions if isinstance(a, Create)]
    return (
        [b for b in bodies if b["kind"] == "Pod"],
        [b for b in bodies if b["kind"] == "ConfigMap"],
    )


_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes ``$(VAR)`` expansion: defined names expand, ``$$`` escapes, others stay."""

    def sub(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))

    return _REF.sub(sub, text)


def _field(pod: Mapping[str, Any], path: str) -> str:
    values = {
        "status.podIP": "127.0.0.1",
        "metadata.name": pod["metadata"]["name"],
        "metadata.namespace": pod["metadata"].get("namespace") or "default",
    }
    return values[path]


def container_env(pod: Mapping[str, Any], container: Mapping[str, Any]) -> dict[str, str]:
    env: dict[str, str] = {}
    for entry in container.get("env") or []:
        ref = (entry.get("valueFrom") or {}).get("fieldRef")
        value = _field(pod, ref["fieldPath"]) if ref else expand(entry.get("value", ""), env)
        env[entry["name"]] = value
    return env


def materialise_volumes(
    pod: Mapping[str, Any], container: Mapping[str, Any], maps: list[dict[str, Any]], sandbox: Path
) -> dict[str, str]:
    """Write ConfigMap volumes into ``sandbox``; returns mountPath → local directory."""
    data = {m["metadata"]["name"]: m.get("data") or {} for m in maps}
    volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
    mounts: dict[str, str] = {}
    for mount in container.get("volumeMounts") or []:
        source = (volumes.get(mount["name"]) or {}).get("configMap")
        if source is None:
            continue
        target = sandbox / mount["name"]
        target.mkdir(parents=True, exist_ok=True)
        for key, text in data.get(source["name"], {}).items():
            (target / key).write_text(LOCAL_RSH_AGENT if key == "kubexec.sh" else text)
            (target / key).chmod(0o755)
        mounts[mount["mountPath"].rstrip("/")] = str(target)
    return mounts


@dataclass
class Replica:
    """One planned container and its process (restarted in place when the policy says so)."""

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: str
    policy: str
    log: Path
    idle: bool
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0
    exit_codes: list[int] = field(default_factory=list)

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.argv, env=self.env, cwd=self.cwd, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def _replica(job: Job, pod: dict[str, Any], maps: list[dict[str, Any]], tmp: Path,
             python_bin: Path) -> Replica:  # fmt: skip
    container = pod["spec"]["containers"][0]
    env = container_env(pod, container)
    mounts = materialise_volumes(pod, container, maps, tmp / pod["metadata"]["name"])
    for key, value in env.items():
        for mount_path, local in mounts.items():
            if value.startswith(mount_path + "/"):
                env[key] = local + value[len(mount_path) :]
    argv = [expand(a, env) for a in [*container.get("command", []), *container.get("args", [])]]
    rtype = pod["metadata"]["labels"][naming.REPLICA_TYPE_LABEL]
    spec = next(s for rt, s in job.spec.replica_specs.items() if rt.lower() == rtype)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_"))}
    base["PATH"] = f"{python_bin}{os.pathsep}{base.get('PATH', '')}"
    base["PYTHONPATH"] = str(ROOT)
    return Replica(
        name=pod["metadata"]["name"],
        argv=argv,
        env={**base, **env},
        cwd=container.get("workingDir") or str(ROOT),
        policy=str(spec.restart_policy or "Never"),
        log=tmp / f"{pod['metadata']['name']}.log",
        idle=bool(argv) and argv[0] == "sleep",
    )


@dataclass(frozen=True, slots=True)
class Outcome:
    """How the job ended: success, per-replica exit codes and output, wall time."""

    succeeded: bool
    seconds: float
    exit_codes: dict[str, list[int]]
    logs: dict[str, str]

    def output(self) -> str:
        return "\n".join(f"===== {name}\n{text}" for name, text in self.logs.items())


def _step(replica: Replica) -> str:
    """Poll one replica: 'running', 'done' or 'failed' (restarting it when allowed)."""
    assert replica.process is not None
    code = replica.process.poll()
    if code is None:
        return "running"
    if code < 0:  # killed by a signal: report it as a container runtime would
        code = 128 - code
    replica.process = None if code else replica.process
    if code == 0:
        return "done"
    replica.exit_codes.append(code)
    if policies.is_retryable(replica.policy, code) and replica.restarts < MAX_RESTARTS:
        replica.restarts += 1
        replica.start()
        return "running"
    return "failed"


def run(path: Path, *, deadline: float = 300.0, python_bin: Path | None = None,
        extra_env: Mapping[str, str] | None = None) -> Outcome:  # fmt: skip
    """Run the job of manifest ``path`` to completion (or ``deadline`` seconds)."""
    job = load(path)
    pods, maps = planned_objects(job)
    tmp = Path(tempfile.mkdtemp(prefix=f"trainop-e2e-{job.metadata.name}-"))
    bin_dir = python_bin or Path(sys.executable).parent
    replicas = [_replica(job, pod, maps, tmp, bin_dir) for pod in pods]
    for replica in replicas:
        replica.env.update(extra_env or {})
        replica.start()
    started, states = time.monotonic(), {r.name: "running" for r in replicas}
    try:
        while time.monotonic() - started < deadline:
            for replica in replicas:
                if states[replica.name] == "running":
                    states[replica.name] = _step(replica)
            waited = [states[r.name] for r in replicas if not r.idle]
            if "failed" in waited or all(state == "done" for state in waited):
                break
            time.sleep(0.2)
    finally:
        for replica in replicas:
            replica.stop()
    seconds = time.monotonic() - started
    waited = [states[r.name] for r in replicas if not r.idle]
    logs = {r.name: r.log.read_text(errors="replace") for r in replicas}
    shutil.rmtree(tmp, ignore_errors=True)
    return Outcome(
        succeeded=all(state == "done" for state in waited),
        seconds=seconds,
        exit_codes={r.name: r.exit_codes for r in replicas},
        logs=logs,
    )
