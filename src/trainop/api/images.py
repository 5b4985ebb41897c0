"""Container image references as Kubernetes reads them (pure).

``pull_policy`` is kube-apiserver's default ``imagePullPolicy`` for an image: the API server
fills it in on every write (``cluster.apiserver.admission.defaults``) and the container kubelet
applies the same rule to a pod stored without one (``cluster.kubelet.runtimes.images``).
"""

from __future__ import annotations


def pull_policy(image: str) -> str:
    """``Always`` when the image's tag is ``latest``, or when it has neither tag nor digest
    (``latest`` is assumed then), else ``IfNotPresent``."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else ""
    if not image or (not tag and digest):
        return "IfNotPresent"
    return "Always" if tag in ("", "latest") else "IfNotPresent"
