"""A 2-node TrainJob against the equivalent v1 PyTorchJob under ``trainop run`` (issue 23 item 7).

Same script, same launcher, same world, side by side:

- **trainjob**: ``trainop run examples/trainjob/torch-ddp.yaml`` — Trainer v2 on the shipped
  ``torch-distributed`` runtime, ``numNodes: 2``, ``numProcPerNode: 2``: TrainJob → JobSet →
  two Indexed Jobs → two pods, each ``torchrun examples/pytorch/ddp.py`` with the Torch
  plugin's ``PET_*`` env;
- **v1**: ``trainop run examples/pytorch/torchrun-nproc.yaml`` — a PyTorchJob with one master and
  one worker, ``nprocPerNode: "2"``: two pods, each ``torchrun examples/pytorch/ddp.py`` with the
  v1 operator's ``PET_*`` env.

Both reach world size 4 and must print four ``PROOF ddp ... world=4 ... OK`` lines and exit 0,
else the benchmark exits 1 (missing the target is not a failure). Rounds alternate the two (the
order flips every round), so load on this shared machine hits both alike. Time-to-result is
``trainop run``'s wall time from start to exit: local cluster up, CRDs (and, for TrainJobs, the
shipped runtimes), the controllers, the pods, training, the result, teardown. Each run is split
into ``start`` (until the first rank's ``joining`` line: the cluster, the objects, the pods,
``import torch``), ``train`` (until the last PROOF) and ``end`` (until exit); ``start`` is
shown as ``launch`` (until a pod's first line, torchrun's, printed once it has imported torch and
starts its ranks: the cluster, the objects, the pods) and ``ranks`` (the ranks' start-up).

Usage: ``.venv/bin/python benchmarks/trainjob_vs_v1.py [--rounds 5]``; target: ratio ≤ 1.1.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from collections.abc import Sequence

from local_overhead import BIN, Run, base_env, spread, timed

VARIANTS = {
    "trainjob": "examples/trainjob/torch-ddp.yaml",
    "v1": "examples/pytorch/torchrun-nproc.yaml",
}
WORLD = 4
TARGET = 1.1
PROOF_OK = re.compile(r"PROOF ddp rank=(\d+) world=4 .*? param_spread=0 OK")
JOINING = re.compile(r"rank \d+/4: joining")
POD_LINE = re.compile(r"^\[(node|master|worker)-[\d-]+\] ")  # a pod's first output: torchrun's


def proofs(run: Run) -> int:
    """How many distinct ranks printed ``PROOF ... OK``."""
    return len({m[1] for _, line in run.lines for m in PROOF_OK.finditer(line)})


def phases(run: Run) -> dict[str, float]:
    launched, joined, proved = run.first(POD_LINE), run.first(JOINING), run.last(PROOF_OK)
    if launched is None or joined is None or proved is None:
        return {}
    return {
        "launch": launched,
        "ranks": joined - launched,
        "train": proved - joined,
        "end": run.seconds - proved,
    }


def run_variant(name: str, timeout: float) -> Run:
    return timed([([str(BIN / "trainop"), "run", VARIANTS[name]], base_env())], timeout=timeout)


def check(name: str, run: Run) -> str | None:
    """Why the run does not count, or None."""
    if run.code != 0:
        return f"{name} exited {run.code}"
    if proofs(run) != WORLD:
        return f"{name} printed {proofs(run)} PROOF ... OK lines, expected {WORLD}"
    if run.orphans:
        return f"{name} left processes behind: {run.orphans}"
    return None


def describe(run: Run) -> str:
    parts = " ".join(f"{k}={v:.2f}" for k, v in phases(run).items())
    return f"{run.seconds:6.2f}s  ({parts})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=300.0, help="per run, seconds")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every run's output")
    args = parser.parse_args(argv)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start", flush=True)
    results: dict[str, list[Run]] = {name: [] for name in VARIANTS}
    for round_ in range(1, args.rounds + 1):
        order = list(VARIANTS) if round_ % 2 else list(reversed(VARIANTS))
        for name in order:
            run = run_variant(name, args.timeout)
            problem = check(name, run)
            if args.verbose or problem:
                print("\n".join(f"  {t:7.2f} {line}" for t, line in run.lines))
            if problem:
                print(f"round {round_}: {problem}", file=sys.stderr)
                return 1
            results[name].append(run)
            print(f"round {round_} {name:9} {describe(run)}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at end")
    for name, runs in results.items():
        print(f"{name:9} {spread([r.seconds for r in runs])}")
        for phase in phases(runs[0]):
            print(f"  {phase:6} {spread([phases(r)[phase] for r in runs])}")
    medians = {name: statistics.median(r.seconds for r in runs) for name, runs in results.items()}
    paired = [
        a.seconds / b.seconds for a, b in zip(results["trainjob"], results["v1"], strict=True)
    ]
    ratio = medians["trainjob"] / medians["v1"]
    verdict = "met" if ratio <= TARGET else "missed"
    print(
        f"ratio trainjob/v1 (medians) {ratio:.3f}; per round {min(paired):.2f}-"
        f"{max(paired):.2f}; target ≤ {TARGET}: {verdict}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
