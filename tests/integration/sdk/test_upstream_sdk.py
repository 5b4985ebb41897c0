"""``examples/sdk/upstream_script.py`` under upstream's own SDK, ``kubeflow-training`` 1.9.

The script's one trainop line (the import) is swapped for upstream's, and it runs in a separate
virtual environment with ``kubeflow-training==1.9.*`` from PyPI (``kubernetes<32``: 1.9's
generated client predates 32's changes) against the shared ``trainop local up`` cluster.
Marked ``slow`` (a pip install from the network); skipped when the index cannot be reached.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TRAINOP_IMPORT = "from trainop.sdk import TrainingClient"
UPSTREAM_IMPORT = "from kubeflow.training import TrainingClient"


@pytest.fixture(scope="module")
def upstream_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("upstream-sdk") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    install = [str(python), "-m", "pip", "install", "--quiet", "kubeflow-training==1.9.*"]
    done = subprocess.run(
        [*install, "kubernetes<32"], capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0:
        pytest.skip(f"cannot install kubeflow-training 1.9: {done.stderr[-400:]}")
    return python


@pytest.mark.slow
def test_the_upstream_script_runs_unchanged_but_its_import_under_upstream_sdk(
    upstream_python: Path, kubeconfig: Path, tmp_path: Path
) -> None:
    source = (ROOT / "examples" / "sdk" / "upstream_script.py").read_text()
    lines = [line for line in source.splitlines() if line.startswith(TRAINOP_IMPORT)]
    assert len(lines) == 1, "exactly one line is trainop's"
    script = tmp_path / "upstream_script.py"
    script.write_text(source.replace(lines[0], UPSTREAM_IMPORT))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["KUBECONFIG"] = str(kubeconfig)
    done = subprocess.run(
        [str(upstream_python), str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "('Succeeded', 'True')" in done.stdout
    assert "[Pod pytorch-upstream-script-master-0]: epoch 2 done" in done.stdout
    assert "deleted pytorch-upstream-script" in done.stdout
