"""The steps of ``initializers.yaml``: two initializers fill a shared claim, the trainer reads it.

``dataset``: writes ``dataset.csv`` (rows of y = 3x - 2, as many as ``STORAGE_URI``'s
``synthetic://rows=N`` says) into the claim. ``model``: writes ``model.json``, a linear
model's starting parameters. ``train``: started by the JobSet only after both initializer Jobs
are Complete (``dependsOn``), it reads both files, fits the model by gradient descent and
prints ``PROOF steps ... OK`` when the files were finished before it started and the fit
reaches the line. The claim is mounted at ``/workspace``; under the process runtime a mount
path P is ``$TRAINOP_ROOT/P`` (design note 060), in a container it is P itself.
"""

import json
import os
import sys
import time
from pathlib import Path

WORK = Path(os.environ.get("TRAINOP_ROOT", "") + "/workspace")
STARTED = time.time()


def dataset() -> int:
    rows = int(os.environ["STORAGE_URI"].rpartition("rows=")[2])
    lines = [f"{x / rows:.6f},{3 * x / rows - 2:.6f}" for x in range(rows)]
    (WORK / "dataset.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"dataset: {rows} rows from {os.environ['STORAGE_URI']}", flush=True)
    return 0


def model() -> int:
    (WORK / "model.json").write_text(json.dumps({"w": 0.0, "b": 0.0}), encoding="utf-8")
    print(f"model: initial parameters from {os.environ['STORAGE_URI']}", flush=True)
    return 0


def train() -> int:
    files = [WORK / "dataset.csv", WORK / "model.json"]
    before = all(f.stat().st_mtime <= STARTED for f in files)
    data = [tuple(map(float, line.split(","))) for line in files[0].read_text().split()]
    params = json.loads(files[1].read_text())
    w, b = params["w"], params["b"]
    for _ in range(2000):
        gw = sum((w * x + b - y) * x for x, y in data) * 2 / len(data)
        gb = sum((w * x + b - y) for x, y in data) * 2 / len(data)
        w, b = w - 0.5 * gw, b - 0.5 * gb
    ok = before and abs(w - 3) < 0.01 and abs(b + 2) < 0.01
    print(
        f"PROOF steps rows={len(data)} written_before_start={before} w={w:.4f} b={b:.4f} "
        f"{'OK' if ok else 'FAIL'}",
        flush=True,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit({"dataset": dataset, "model": model, "train": train}[sys.argv[1]]())
