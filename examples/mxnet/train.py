"""MXNet parameter-server training across an MXJob's scheduler, server and workers.

The operator sets DMLC_ROLE, DMLC_PS_ROOT_URI/PORT (the scheduler), DMLC_NUM_SERVER,
DMLC_NUM_WORKER and DMLC_WORKER_ID. For the scheduler and server roles, ``import mxnet`` runs
ps-lite's loop and exits when the workers finish. Each worker pushes rank+1 into a dist_sync
key-value store (the server must sum every worker's push), then trains a linear model with a
gluon Trainer on the same store to a stated loss. Workers print ``PROOF ... OK`` and exit 0.
"""

import os
import sys

role = os.environ.get("DMLC_ROLE", "worker")
print(f"{role}: scheduler at {os.environ['DMLC_PS_ROOT_URI']}:{os.environ['DMLC_PS_ROOT_PORT']}")
sys.stdout.flush()

import mxnet as mx  # noqa: E402  (servers and the scheduler block in here, then exit)
from mxnet import autograd, gluon  # noqa: E402

TARGET_LOSS = 0.01


def main() -> int:
    kv = mx.kv.create("dist_sync")
    rank, workers = kv.rank, kv.num_workers
    kv.init(99, mx.nd.zeros((4,)))
    kv.push(99, mx.nd.ones((4,)) * (rank + 1))
    pulled = mx.nd.zeros((4,))
    kv.pull(99, out=pulled)
    total, expected = int(pulled.asnumpy()[0]), workers * (workers + 1) // 2

    mx.random.seed(1234 + rank)
    x = mx.nd.random.normal(shape=(256, 1))
    y = 3 * x - 2
    net = gluon.nn.Dense(1, in_units=1)
    net.initialize(mx.init.Zero())
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore=kv)
    for _ in range(100):
        with autograd.record():
            loss = gluon.loss.L2Loss()(net(x), y).mean()
        loss.backward()
        trainer.step(1)
    final = float(loss.asscalar())
    weight = float(net.weight.data().asnumpy().ravel()[0])
    ok = total == expected and workers > 1 and final < TARGET_LOSS
    print(
        f"PROOF mxnet worker={rank} workers={workers} kvstore sum={total} expected={expected} "
        f"loss={final:.5f} target<{TARGET_LOSS} w={weight:.3f} {'OK' if ok else 'FAIL'}",
        flush=True,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
