"""Overhead of local mode: ``trainop run`` against plain ``torchrun``, same script, same world.

Measures, in rounds that interleave the variants (so machine load hits all of them alike):

- **trainop**: ``trainop run examples/pytorch/ddp.yaml`` (1 master + 2 workers, each
  ``python3 examples/pytorch/ddp.py``), from start to exit: embedded API server, CRDs,
  controller, process kubelet, the job, the logs, teardown;
- **torchrun**: ``torchrun --nnodes 1 --nproc-per-node 3 examples/pytorch/ddp.py`` (the
  baseline of the target, world size 3, rendezvous on 127.0.0.1 at a free port);
- **direct** (informative, ``--no-direct`` skips it): the same three processes started by hand
  with ``MASTER_ADDR``/``MASTER_PORT``/``WORLD_SIZE``/``RANK`` set and the same
  ``OMP_NUM_THREADS`` share as the other two give them (CPUs / processes, at least 1), the
  floor below both;
- **containers** (when podman and ``make container-images`` are there; ``--no-containers``
  skips it): ``trainop run --runtime podman`` of the same job with the image
  ``localhost/trainop-ddp:1`` and this repository bind-mounted read-only (``hostPath``) at
  ``/repo``, the working directory: the same script in containers on their own network;
- **trainop@ref** (with ``--compare-src DIR``): ``trainop run`` importing trainop from
  ``DIR/src`` (``PYTHONPATH``), e.g. ``git archive REV src | tar -x -C DIR``: before/after a
  change, under the same load.

Every run must exit 0 and print one ``PROOF ddp ... OK`` per rank, else the benchmark exits 1
(missing the target is not a failure). Each variant runs in its own session; when it exits,
every process left in that session is reported as an orphan and killed. Output lines are
time-stamped as they arrive (``PYTHONUNBUFFERED=1`` for every variant), which splits each run
into phases: ``start`` (until the replicas' first line, printed after ``import torch``),
``train`` (until the last PROOF line) and ``end`` (until exit); for trainop, ``start`` is
split again at the job's ``Created`` condition (the local cluster is up, the job submitted).

Per round, each trainop variant's wall time is divided by torchrun's of the same round (and
containers' by trainop's): those per-round ratios, and their median, are printed beside the
ratio of the medians.

Usage: ``.venv/bin/python benchmarks/local_overhead.py [--rounds 5]``; targets (issue 24 item
5): trainop ÷ torchrun ≤ 1.0, containers ÷ processes ≤ 1.15.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
MANIFEST = "examples/pytorch/ddp.yaml"
SCRIPT = "examples/pytorch/ddp.py"
WORLD = 3
TARGET = 1.0
CONTAINERS_TARGET = 1.15
# Not anchored: torchrun's workers share one pipe, so two ranks' lines may interleave (each
# line's text is one write, its newline another).
PROOF_OK = re.compile(r"PROOF ddp rank=(\d+) world=3 .*? param_spread=0 OK")
JOINING = re.compile(r"rank \d+/3: joining")
CREATED = re.compile(r"PyTorchJob/\S+ Created")


@dataclass(slots=True)
class Run:
    """One timed run: wall seconds, when marked lines first/last arrived, and its output."""

    seconds: float
    code: int
    lines: list[tuple[float, str]] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)

    def first(self, pattern: re.Pattern[str]) -> float | None:
        return next((t for t, line in self.lines if pattern.search(line)), None)

    def last(self, pattern: re.Pattern[str]) -> float | None:
        return next((t for t, line in reversed(self.lines) if pattern.search(line)), None)

    def proofs(self) -> int:
        """How many distinct ranks printed ``PROOF ... OK``."""
        return len({m[1] for _, line in self.lines for m in PROOF_OK.finditer(line)})

    def phases(self) -> dict[str, float]:
        joined, proved = self.first(JOINING), self.last(PROOF_OK)
        if joined is None or proved is None:
            return {}
        phases = {"start": joined, "train": proved - joined, "end": self.seconds - proved}
        created = self.first(CREATED)
        if created is not None:
            phases |= {"up": created, "pods": joined - created}
        return phases


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def compile_sources(*sources: Path) -> None:
    """Byte-compile trainop's sources first, as an installation has them: a tree edited since
    its last run (or a shell with ``PYTHONDONTWRITEBYTECODE``) would otherwise compile ~300
    modules, ~1 s, at every ``trainop run``; torch's are compiled already."""
    for source in sources:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(source)], check=True)


def base_env() -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # python3, torchrun: this venv's
    for name in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK"):
        env.pop(name, None)
    return env


def timed(commands: Sequence[tuple[list[str], dict[str, str]]], *, timeout: float) -> Run:
    """Start ``commands`` together, each in a new session; time until the last one exits."""
    lines: list[tuple[float, str]] = []
    lock = threading.Lock()
    start = time.monotonic()
    procs = [
        subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        for argv, env in commands
    ]
    readers = [threading.Thread(target=_read, args=(p, start, lines, lock)) for p in procs]
    for reader in readers:
        reader.start()
    code = 0
    try:
        for proc in procs:
            code = code or proc.wait(timeout=max(0.0, start + timeout - time.monotonic()))
        seconds = time.monotonic() - start
    except subprocess.TimeoutExpired:
        code, seconds = 124, time.monotonic() - start
    finally:
        orphans = [member for proc in procs for member in _reap(proc)]
    for reader in readers:
        reader.join(timeout=5)
    return Run(seconds, code, sorted(lines), orphans)


def _read(
    proc: subprocess.Popen[bytes],
    start: float,
    lines: list[tuple[float, str]],
    lock: threading.Lock,
) -> None:
    assert proc.stdout is not None
    for raw in proc.stdout:
        stamp = time.monotonic() - start
        with lock:
            lines.append((stamp, raw.decode(errors="replace").rstrip()))


def _reap(proc: subprocess.Popen[bytes]) -> list[str]:
    """Stop the variant if it still runs (SIGTERM: it cleans up), then kill its session."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    left = _session_members(proc.pid)
    for pid, _ in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return [f"{pid} {command}" for pid, command in left]


def _session_members(session: int) -> list[tuple[int, str]]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[3]) == session and fields[0] != "Z":
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                members.append((int(entry.name), command.strip()))
        except (OSError, ValueError):
            continue
    return members


def run_trainop(timeout: float, *, source: Path | None = None) -> Run:
    env = base_env()
    if source is not None:
        env["PYTHONPATH"] = str(source / "src")
    return timed([([str(BIN / "trainop"), "run", MANIFEST], env)], timeout=timeout)


IMAGE = "localhost/trainop-ddp:1"
PODMAN_FLAGS = ("--runtime", "runc", "--cgroup-manager", "cgroupfs")


def containers_ready() -> bool:
    """Whether podman runs here and the image of ``make container-images`` is present."""
    podman = shutil.which("podman")
    if podman is None:
        return False
    with tempfile.TemporaryDirectory() as scratch:
        conf = Path(scratch) / "containers.conf"
        conf.write_text("[containers]\ndefault_ulimits = []\n")
        found = subprocess.run(
            [podman, *PODMAN_FLAGS, "image", "exists", IMAGE],
            env=dict(os.environ, CONTAINERS_CONF=str(conf)),
            check=False,
        )
    return found.returncode == 0


def containers_manifest(directory: Path) -> Path:
    """``MANIFEST`` with the image, the repository mounted at /repo, and /repo as workdir."""
    text = (ROOT / MANIFEST).read_text()
    text = text.replace(
        "image: python:3.11", f"image: {IMAGE}\n              imagePullPolicy: Never"
    )
    mount = (
        "workingDir: /repo\n              volumeMounts: [{name: repo, mountPath: /repo, "
        "readOnly: true}]\n          volumes: [{name: repo, hostPath: {path: " + str(ROOT) + "}}]"
    )
    text = text.replace(
        'command: ["python3", "examples/pytorch/ddp.py"]',
        ('command: ["python3", "examples/pytorch/ddp.py"]\n              ' + mount),
    )
    path = directory / "ddp-containers.yaml"
    path.write_text(text)
    return path


def run_containers(timeout: float) -> Run:
    with tempfile.TemporaryDirectory() as scratch:
        manifest = containers_manifest(Path(scratch))
        argv = [str(BIN / "trainop"), "run", "--runtime", "podman", str(manifest)]
        return timed([(argv, base_env())], timeout=timeout)


def run_torchrun(timeout: float) -> Run:
    argv = [
        str(BIN / "torchrun"),
        "--nnodes",
        "1",
        "--nproc-per-node",
        str(WORLD),
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(free_port()),
        SCRIPT,
    ]
    return timed([(argv, base_env())], timeout=timeout)


def run_direct(timeout: float) -> Run:
    port = str(free_port())
    commands = []
    for rank in range(WORLD):
        env = base_env() | {
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": port,
            "WORLD_SIZE": str(WORLD),
            "RANK": str(rank),
            # the share torchrun and ``trainop run`` give each of several local processes
            "OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 1) // WORLD)),
        }
        commands.append(([str(BIN / "python3"), SCRIPT], env))
    return timed(commands, timeout=timeout)


def check(name: str, run: Run) -> str | None:
    """Why the run does not count, or None."""
    if run.code != 0:
        return f"{name} exited {run.code}"
    if run.proofs() != WORLD:
        return f"{name} printed {run.proofs()} PROOF ... OK lines, expected {WORLD}"
    if run.orphans:
        return f"{name} left processes behind: {run.orphans}"
    return None


def describe(run: Run) -> str:
    phases = " ".join(f"{k}={v:.2f}" for k, v in run.phases().items())
    return f"{run.seconds:6.2f}s  ({phases})"


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f}s, min {min(values):.2f}, max {max(values):.2f}"


def report_ratio(
    results: dict[str, list[Run]],
    medians: dict[str, float],
    name: str,
    base: str,
    target: float,
) -> None:
    """Print ``name`` ÷ ``base``: of the medians, and per round (same load), against ``target``."""
    paired = [a.seconds / b.seconds for a, b in zip(results[name], results[base], strict=True)]
    ratio = medians[name] / medians[base]
    verdict = "met" if ratio <= target else "missed"
    rounds = " ".join(f"{r:.2f}" for r in paired)
    print(
        f"ratio {name}/{base} (medians) {ratio:.3f}; per round [{rounds}], median "
        f"{statistics.median(paired):.3f}; target ≤ {target}: {verdict}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=300.0, help="per run, seconds")
    parser.add_argument("--no-direct", action="store_true", help="skip the direct variant")
    parser.add_argument("--no-containers", action="store_true", help="skip the containers variant")
    parser.add_argument(
        "--compare-src", type=Path, default=None, help="also time trainop from DIR/src"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="print every run's output")
    args = parser.parse_args(argv)
    variants: dict[str, Callable[[float], Run]] = {
        "trainop": run_trainop,
        "torchrun": run_torchrun,
    }
    if not args.no_direct:
        variants["direct"] = run_direct
    if not args.no_containers and containers_ready():
        variants["containers"] = run_containers
    if args.compare_src is not None:
        source = args.compare_src.resolve()
        variants["trainop@ref"] = lambda timeout: run_trainop(timeout, source=source)
    compile_sources(ROOT / "src", *([args.compare_src / "src"] if args.compare_src else []))
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start", flush=True)
    results: dict[str, list[Run]] = {name: [] for name in variants}
    for round_ in range(1, args.rounds + 1):
        for name, variant in variants.items():
            run = variant(args.timeout)
            problem = check(name, run)
            if args.verbose or problem:
                print("\n".join(f"  {t:7.2f} {line}" for t, line in run.lines))
            if problem:
                print(f"round {round_}: {problem}", file=sys.stderr)
                return 1
            results[name].append(run)
            print(f"round {round_} {name:11} {describe(run)}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at end")
    for name, runs in results.items():
        print(f"{name:11} {spread([r.seconds for r in runs])}")
        for phase in runs[0].phases():
            values = [r.phases()[phase] for r in runs]
            print(f"  {phase:6} {spread(values)}")
    medians = {name: statistics.median(r.seconds for r in runs) for name, runs in results.items()}
    for name in (n for n in results if n.startswith("trainop")):
        report_ratio(results, medians, name, "torchrun", TARGET)
    for other in ("direct", "trainop@ref"):
        if other in medians:
            print(f"ratio trainop/{other} (medians) {medians['trainop'] / medians[other]:.3f}")
    if "containers" in medians:
        report_ratio(results, medians, "containers", "trainop", CONTAINERS_TARGET)
        print(
            f"ratio containers/torchrun (medians) {medians['containers'] / medians['torchrun']:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
