"""The kubelet: runs the local node's pods through a runtime (DESIGN §6).

``Kubelet(client=..., config=KubeletConfig(root=...))`` watches pods bound to the node and runs
each in a per-pod sandbox, its containers as host processes or, with a container runtime, as
Podman or Docker containers (``runtimes``); ``LogFiles`` is the API server's log source over
their output; ``exec`` runs a command in a running container; ``sim`` is the simulated kubelet
(phases by rule, nothing run); ``status`` renders and writes pod status for both. It meets the
API server, scheduler and controllers only through the API. See
``docs/design/060-process-kubelet.md`` and ``095-container-kubelet.md``.
"""

from trainop.cluster.kubelet.kubelet import DEFAULT_NODE, Kubelet, KubeletConfig
from trainop.cluster.kubelet.logfiles import LogFiles
from trainop.cluster.kubelet.podcontext import Backoff

__all__ = ["DEFAULT_NODE", "Backoff", "Kubelet", "KubeletConfig", "LogFiles"]
