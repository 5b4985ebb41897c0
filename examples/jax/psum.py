"""JAX multi-process on CPU: ``jax.distributed.initialize`` from the JAXJob's env, then a sum.

The operator gives every worker COORDINATOR_ADDRESS (host of worker 0), COORDINATOR_PORT,
NUM_PROCESSES and PROCESS_ID. Each process puts process_id+1 on its CPU device; a jitted sum
over the global array (one shard per process) must equal N*(N+1)/2 on every process.
Prints ``PROOF ... OK`` and exits 0.
"""

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def main() -> int:
    address = f"{os.environ['COORDINATOR_ADDRESS']}:{os.environ['COORDINATOR_PORT']}"
    count, index = int(os.environ["NUM_PROCESSES"]), int(os.environ["PROCESS_ID"])
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(address, num_processes=count, process_id=index)
    mesh = Mesh(np.array(jax.devices()), ("p",))
    local = [jax.device_put(jnp.array([float(index + 1)]), d) for d in jax.local_devices()]
    shape = (jax.device_count(),)
    values = jax.make_array_from_single_device_arrays(shape, NamedSharding(mesh, P("p")), local)
    replicated = NamedSharding(mesh, P())
    total = float(jax.jit(jnp.sum, out_shardings=replicated)(values).addressable_data(0))
    expected = count * (count + 1) / 2
    ok = total == expected and jax.process_count() == count > 1
    print(
        f"PROOF jax process={index} processes={jax.process_count()} devices={jax.device_count()} "
        f"sum={total:g} expected={expected:g} {'OK' if ok else 'FAIL'}",
        flush=True,
    )
    jax.distributed.shutdown()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
