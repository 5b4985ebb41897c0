"""Bearer-token authentication and the kubeconfig that carries the token to clients.

One token per state directory (``token``, mode 0600), created on first start and reused, so
a kubeconfig written earlier keeps working after a restart. Every request except the public
health and version endpoints (as kube-apiserver's ``system:public-info-viewer`` allows them)
must send ``Authorization: Bearer <token>``, else 401 with a ``Status`` body. The comparison
is constant-time. The kubeconfig is written atomically with mode 0600, carries the serving
CA (``tls``) as ``certificate-authority-data``, and loads unchanged with kubectl,
``kubernetes.config.load_kube_config`` and lightkube's ``KubeConfig.from_file``.
"""

from __future__ import annotations

import base64
import hmac
import os
from pathlib import Path

import yaml

from trainop.cluster.apiserver.rest import objects

PUBLIC_PATHS = frozenset({"healthz", "readyz", "livez", "version"})
CONTEXT = "trainop-local"


def load_or_create_token(state_dir: Path) -> str:
    """The state directory's token, created (0600) when missing."""
    path = state_dir / "token"
    if path.exists():
        return path.read_text().strip()
    token = objects.random_token()
    _write_private(path, token + "\n")
    return token


def is_authorized(header: str | None, token: str) -> bool:
    """Whether an Authorization header carries the token."""
    if not header or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header[len("Bearer ") :].strip().encode(), token.encode())


def write_kubeconfig(
    path: Path, *, server: str, token: str, ca_pem: bytes = b"", namespace: str = "default"
) -> None:
    """Write a one-context kubeconfig for ``server`` (mode 0600, atomic replace).

    ``ca_pem`` (an https server's CA) goes in as ``certificate-authority-data``.
    """
    cluster: dict[str, str] = {"server": server}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": CONTEXT, "user": {"token": token}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }
    _write_private(path, yaml.safe_dump(config, sort_keys=False))


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
