"""What every local kubelet shares: the pod ``status`` it renders and the writer that sends it.

``render`` builds the Kubernetes shapes (conditions, container entries, terminated states)
from plain values, so the simulated and the real kubelet report pods identically;
``restartpolicy`` is kubelet's rule for a container that exited (restart it, or is the pod
done); ``writer.StatusWriter`` sends each transition's status once, in order, per pod.
"""
