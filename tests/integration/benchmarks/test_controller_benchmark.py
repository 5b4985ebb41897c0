"""Smoke tests of ``benchmarks/controller.py``: it sizes the server's ceilings to the run,
prints every figure, and ends at once, in the server's words, when a create is refused.

Each run is small (20 jobs: 80 baseline pods, 80 operator pods) and takes seconds. To show
that the benchmark runs beyond the server's pod ceiling without a real 4,096-pod run, the
ceiling it starts from is lowered to 40 with the benchmark's ``--max-pods``, the same flag that
reaches the server: an unsized run is refused at the 41st pod (as the refusal test shows with
``--exact-ceilings``). No timing is asserted (the machine is shared); the refusal tests give
every wait ten times its deadline, so a failure at a deadline instead of at the refusal would
take minutes and time out.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SMALL = ("--jobs", "20", "--steady-seconds", "1")
QUOTA = "exceeded quota: local-max-pods"


def run_benchmark(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    script = str(ROOT / "benchmarks/controller.py")
    return subprocess.run(
        [sys.executable, script, *SMALL, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_a_run_beyond_the_pod_ceiling_it_was_given_is_sized_and_prints_every_figure() -> None:
    done = run_benchmark("--max-pods", "40")
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    # 160 pods + 10%: below it the operator's pods would be refused, at 40 the baseline's
    assert re.search(
        r"^server ceilings: --max-pods 176 --max-replicas-per-job 1024 \(sized", out, re.M
    )
    assert re.search(r"^\(a\) operator time / bare-client time: \d+\.\d+$", out, re.M), out
    assert re.search(r"^\(b\) writes per job .*= 1\.000", out, re.M), out
    assert re.search(r"^\(c\) GET/LIST during .*: 0$", out, re.M), out
    assert re.search(r"^\(d\) operator RSS: \d+ MB", out, re.M), out
    assert re.search(r"^\(e\) operator CPU per job: \d+\.\d ms", out, re.M), out
    assert re.search(r"^\(f\) operator RSS per 1,000 pods: \d+\.\d MB", out, re.M), out
    assert re.search(r"^\(g\) job create to all .*p50 \d+\.\d\d s, p99 \d+\.\d\d s", out, re.M), out
    assert re.search(r"^\(h\) write rate, operator / bare client: \d+\.\d\d", out, re.M), out
    assert re.search(r"^wall time: \d+\.\d s", out, re.M), out


@pytest.mark.parametrize(
    ("ceiling", "who", "message"),
    [
        pytest.param(("--max-pods", "40"), "the baseline client", QUOTA, id="baseline"),
        pytest.param(
            ("--max-replicas-per-job", "2"),
            "the job creates",
            "must be no more than 2, the local cluster's replica ceiling per job",
            id="job-creates",
        ),
        # 80 baseline pods fit, then 20 of the operator's: its 21st is refused
        pytest.param(("--max-pods", "100"), "the operator's creates", QUOTA, id="operator"),
    ],
)
def test_a_refused_create_ends_the_run_at_once_with_the_servers_message(
    ceiling: tuple[str, str], who: str, message: str
) -> None:
    done = run_benchmark(*ceiling, "--exact-ceilings", "--deadline-scale", "10", timeout=120)
    assert done.returncode == 1, done.stdout[-3000:]
    assert done.stderr.startswith(f"controller benchmark failed: {who}"), done.stderr[-3000:]
    assert message in done.stderr, done.stderr[-3000:]
    assert "(a) operator time" not in done.stdout


def test_a_wait_past_its_deadline_ends_the_run_naming_what_it_waited_for() -> None:
    done = run_benchmark("--deadline-scale", "0.00001", timeout=120)
    assert done.returncode == 1, done.stdout[-3000:]
    assert re.search(
        r"^controller benchmark failed: the baseline client: \d+ of 160 creates done after",
        done.stderr,
        re.M,
    ), done.stderr[-3000:]
