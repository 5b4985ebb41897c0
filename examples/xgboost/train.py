"""Distributed XGBoost (collective/Rabit) across the replicas of an XGBoostJob.

The operator gives every replica MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK (master 0 is
rank 0). Rank 0 starts the Rabit tracker on MASTER_ADDR:MASTER_PORT; every rank joins it, trains
on its own shard of a synthetic binary-classification set and ends with the same model. Proof:
an all-reduce of rank+1, a model byte-identical to rank 0's (broadcast), and held-out accuracy
above the stated target. Prints ``PROOF ... OK`` and exits 0, else exits 1.
"""

import hashlib
import os
import sys

import numpy as np
import xgboost as xgb
from xgboost import collective
from xgboost.tracker import RabitTracker

TARGET_ACCURACY = 0.9


def synthetic(seed: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Points in 5-D labelled by a fixed hyperplane (same plane for every rank)."""
    x = np.random.default_rng(seed).normal(size=(rows, 5))
    y = (x @ np.array([1.5, -2.0, 0.5, 1.0, -0.5]) > 0.2).astype(np.float32)
    return x, y


def train(rank: int, world: int) -> tuple[int, bool, float]:
    total = int(collective.allreduce(np.array([rank + 1.0]), collective.Op.SUM)[0])
    x, y = synthetic(seed=100 + rank, rows=2000)  # each rank its own shard
    booster = xgb.train(
        {"objective": "binary:logistic", "max_depth": 3, "eta": 0.3, "tree_method": "hist"},
        xgb.DMatrix(x, label=y),
        num_boost_round=20,
    )
    digest = hashlib.sha256(bytes(booster.save_raw("json"))).hexdigest()
    same = collective.broadcast(digest, 0) == digest
    x_test, y_test = synthetic(seed=7, rows=2000)
    accuracy = float(((booster.predict(xgb.DMatrix(x_test)) > 0.5) == y_test).mean())
    print(f"rank {rank}/{world}: model sha256 {digest[:16]} accuracy {accuracy:.4f}", flush=True)
    return total, same, accuracy


def main() -> int:
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    tracker = None
    if rank == 0:
        tracker = RabitTracker(n_workers=world, host_ip=host, port=port, sortby="task")
        tracker.start()
    args = {"dmlc_tracker_uri": host, "dmlc_tracker_port": port, "dmlc_task_id": str(rank)}
    with collective.CommunicatorContext(**args):
        total, same, accuracy = train(rank, world)
    if tracker is not None:
        tracker.wait_for()
    expected = world * (world + 1) // 2
    ok = total == expected and same and accuracy > TARGET_ACCURACY
    print(
        f"PROOF xgboost rank={rank} world={world} allreduce sum={total} expected={expected} "
        f"model_identical={same} accuracy={accuracy:.4f} target>{TARGET_ACCURACY} "
        f"{'OK' if ok else 'FAIL'}",
        flush=True,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
