"""The simulated kubelet: pods move through their phases by rule, with no processes.

Used by controller integration tests (with a ``FakeClock``: time advances instantly) and by
scale benchmarks (thousands of pods, no annotations, kubelet-wide default ``Rules``). The
annotations and the state machine are described in ``rules`` and ``podstate`` and in
``docs/design/030-simulated-kubelet.md``.
"""

from trainop.cluster.kubelet.sim.kubelet import DEFAULT_NODE, SimulatedKubelet
from trainop.cluster.kubelet.sim.rules import PREFIX, Rules

__all__ = ["DEFAULT_NODE", "PREFIX", "Rules", "SimulatedKubelet"]
