"""The process kubelet: runs the local node's pods as child processes (DESIGN §6).

``ProcessKubelet(client=..., config=KubeletConfig(root=...))`` watches pods and runs each in a
per-pod sandbox; ``LogFiles`` is the API server's log source over their output; ``execclient``
runs a command in a running container. See ``docs/design/060-process-kubelet.md``.
"""

from trainop.local.kubelet.kubelet import DEFAULT_NODE, KubeletConfig, ProcessKubelet
from trainop.local.kubelet.logfiles import LogFiles
from trainop.local.kubelet.podrun import Backoff

__all__ = ["DEFAULT_NODE", "Backoff", "KubeletConfig", "LogFiles", "ProcessKubelet"]
