"""TensorFlow MultiWorkerMirroredStrategy on CPU, configured by the TF_CONFIG the operator sets.

Each worker contributes task index+1 to a cross-worker SUM (must be N*(N+1)/2), then trains
y = 3x - 2 on its own synthetic shard with mirrored variables whose updates are averaged across
workers, to a stated loss. Prints ``PROOF ... OK`` and exits 0, else exits 1.
"""

import json
import os
import sys

import tensorflow as tf

TARGET_LOSS = 0.01


def main() -> int:
    config = json.loads(os.environ["TF_CONFIG"])
    index, workers = config["task"]["index"], len(config["cluster"]["worker"])
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    SUM, MEAN = tf.distribute.ReduceOp.SUM, tf.distribute.ReduceOp.MEAN
    contributed = strategy.run(lambda: tf.constant(float(index + 1)))
    total = int(strategy.reduce(SUM, contributed, axis=None).numpy())
    expected = workers * (workers + 1) // 2
    with strategy.scope():
        w = tf.Variable(0.0, aggregation=tf.VariableAggregation.MEAN)
        b = tf.Variable(0.0, aggregation=tf.VariableAggregation.MEAN)
    x = tf.random.stateless_normal((256,), seed=(index, 1))
    y = 3.0 * x - 2.0

    @tf.function
    def step() -> tf.Tensor:
        def replica_step() -> tf.Tensor:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(w * x + b - y))
            grad_w, grad_b = tape.gradient(loss, [w, b])
            w.assign_sub(0.1 * grad_w)  # MEAN aggregation: the update is averaged over workers
            b.assign_sub(0.1 * grad_b)
            return loss

        return strategy.reduce(MEAN, strategy.run(replica_step), axis=None)

    for _ in range(100):
        loss = float(step().numpy())
    ok = total == expected and workers > 1 and loss < TARGET_LOSS
    print(
        f"PROOF tensorflow worker={index} workers={workers} allreduce sum={total} "
        f"expected={expected} loss={loss:.5f} target<{TARGET_LOSS} w={float(w.numpy()):.3f} "
        f"{'OK' if ok else 'FAIL'}",
        flush=True,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
