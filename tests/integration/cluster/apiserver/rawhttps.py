"""Raw ``http.client`` connections to a test server, made from its kubeconfig.

The server serves HTTPS with its own CA; the kubeconfig carries that CA and the token, so a
raw connection verifies the server exactly as kubectl and the client libraries do.
"""

from __future__ import annotations

import base64
import http.client
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from trainop.cluster.apiserver.http import tls


@dataclass(frozen=True)
class Endpoint:
    """Where a kubeconfig points and what it authenticates with."""

    host: str
    port: int
    token: str
    ca_pem: bytes

    @classmethod
    def load(cls, kubeconfig: Path) -> Endpoint:
        config = yaml.safe_load(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        url = urlsplit(cluster["server"])
        assert url.scheme == "https", cluster["server"]
        return cls(
            host=url.hostname or "",
            port=url.port or 443,
            token=config["users"][0]["user"]["token"],
            ca_pem=base64.b64decode(cluster["certificate-authority-data"]),
        )

    def connect(self, timeout: float = 10) -> http.client.HTTPSConnection:
        """A new verified connection."""
        context = tls.client_context(self.ca_pem)
        return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=context)
