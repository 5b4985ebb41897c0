"""PaddlePaddle collective training on CPU (gloo), started by ``paddle.distributed.launch``.

The operator gives every replica PADDLE_MASTER (worker 0's endpoint), PADDLE_NNODES and
PADDLE_JOB_ID; ``python -m paddle.distributed.launch`` reads them, rendezvouses the nodes and
starts this script with PADDLE_TRAINER_ID / PADDLE_TRAINERS_NUM / endpoints set. Each trainer
all-reduces rank+1 (must be N*(N+1)/2) and trains a linear model with DataParallel on its own
synthetic shard to a stated loss. Prints ``PROOF ... OK`` and exits 0, else exits 1.
"""

import sys

import paddle
import paddle.distributed as dist

TARGET_LOSS = 0.01


def main() -> int:
    paddle.set_device("cpu")
    dist.init_parallel_env()
    rank, world = dist.get_rank(), dist.get_world_size()
    value = paddle.to_tensor([float(rank + 1)])
    dist.all_reduce(value)
    total, expected = int(value.numpy()[0]), world * (world + 1) // 2

    paddle.seed(1234 + rank)
    x = paddle.randn([256, 1])
    y = 3.0 * x - 2.0
    model = paddle.DataParallel(paddle.nn.Linear(1, 1))
    optimizer = paddle.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    for _ in range(100):
        loss = paddle.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
    final = float(loss.numpy())
    ok = total == expected and world > 1 and final < TARGET_LOSS
    print(
        f"PROOF paddle rank={rank} world={world} allreduce sum={total} expected={expected} "
        f"loss={final:.5f} target<{TARGET_LOSS} {'OK' if ok else 'FAIL'}",
        flush=True,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
