"""The embedded API server's TLS: a CA and a serving certificate kept in the state directory.

kubectl (client-go) sends a bearer token only over TLS, so the server serves HTTPS by default.
The certificates come from ``controller.certs`` (the webhook's generator, not a copy): a
self-signed CA and a serving certificate for ``kubernetes.default.svc``, ``localhost`` and
``127.0.0.1``, ECDSA P-256, ten years. They live in ``STATE_DIR/pki`` (``tls.crt``,
``tls.key``, ``ca.crt``; every file 0600, the directory 0700) and are reused across restarts
while ``certs.is_usable`` says so, else replaced; the CA's key is never written (a renewal
makes a new CA, and the kubeconfig written at every start carries it). The kubeconfig holds
the CA as ``certificate-authority-data``, which every client here (lightkube, hence the
controller, kubelet, SDK and CLI; the official client; kubectl) verifies against.
"""

from __future__ import annotations

import os
import ssl
from datetime import datetime
from pathlib import Path

from trainop.controller import certs

PKI_DIR = "pki"
# The names kube-apiserver's own serving certificate carries for in-cluster clients.
SERVICE = "kubernetes"
NAMESPACE = "default"


def ensure_bundle(state_dir: Path, *, now: datetime) -> certs.CertBundle:
    """The state directory's serving bundle, generated (or renewed) when missing or unusable."""
    pki = state_dir / PKI_DIR
    bundle = certs.read_dir(pki)
    if bundle is None or not bundle.ca_cert or not _usable(bundle, now):
        bundle = certs.generate(service=SERVICE, namespace=NAMESPACE, now=now)
        pki.mkdir(parents=True, exist_ok=True)
        certs.write_dir(bundle, pki)
    os.chmod(pki, 0o700)
    return bundle


def _usable(bundle: certs.CertBundle, now: datetime) -> bool:
    return certs.is_usable(bundle, dns_name="localhost", now=now)


def server_context(state_dir: Path) -> ssl.SSLContext:
    """An ``SSLContext`` serving the bundle ``ensure_bundle`` wrote (TLS 1.2 or newer)."""
    pki = state_dir / PKI_DIR
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(pki / certs.CERT_FILE, pki / certs.KEY_FILE)
    return context


def client_context(ca_pem: bytes) -> ssl.SSLContext:
    """An ``SSLContext`` that trusts only ``ca_pem`` (tests and raw clients)."""
    return ssl.create_default_context(cadata=ca_pem.decode())
