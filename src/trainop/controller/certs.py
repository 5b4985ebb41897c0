"""Serving certificates for the admission webhook: generate, read, write, check.

The webhook server needs a key and a certificate that the API server trusts for
``<service>.<namespace>.svc``. As upstream (OPA cert-controller's rotator, spec section 10.2),
trainop can make its own: a self-signed CA named ``training-operator-ca`` (organization
``training-operator``) and a serving certificate signed by it. Keys are ECDSA P-256 (fast to
make, accepted by every Kubernetes API server). The serving certificate also names
``.svc.cluster.local``, ``localhost`` and ``127.0.0.1`` so local mode and tests can verify it.

Files follow the Secret's layout, which is also what a mounted Secret shows in the cert dir:
``tls.crt``, ``tls.key``, ``ca.crt`` (and ``ca.key`` only in the Secret). Time is an argument
(``now``); nothing here reads the clock. Storing the bundle in a Secret and injecting the CA
into the webhook configuration live in ``controller.cert_publishing``.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_NAME = "training-operator-ca"
ORGANIZATION = "training-operator"
DEFAULT_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"
CA_FILE = "ca.crt"
CA_KEY_FILE = "ca.key"
# Both certificates live ten years, as the rotator's; one is replaced when less than
# RENEW_BEFORE is left (the rotator's lookahead).
VALIDITY = timedelta(days=3650)
RENEW_BEFORE = timedelta(days=90)
_CLOCK_SKEW = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class CertBundle:
    """PEM bytes of a serving certificate, its key, and the CA that signed it.

    ``ca_key`` is empty when the bundle was read from files that do not carry it (a mounted
    Secret, cert-manager); ``ca_cert`` may be empty when the cert dir holds no ``ca.crt``.
    """

    cert: bytes
    key: bytes
    ca_cert: bytes = b""
    ca_key: bytes = b""


def dns_names(*, service: str, namespace: str) -> tuple[str, ...]:
    """The names the serving certificate is valid for; the first is the one the API server uses."""
    return (f"{service}.{namespace}.svc", f"{service}.{namespace}.svc.cluster.local", "localhost")


def generate(*, service: str, namespace: str, now: datetime) -> CertBundle:
    """A fresh CA and a serving certificate for ``service`` in ``namespace``, valid from ``now``."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(CA_NAME)
    ca_cert = (
        _builder(subject=ca_name, issuer=ca_name, public_key=ca_key.public_key(), now=now)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = dns_names(service=service, namespace=namespace)
    alt_names: list[x509.GeneralName] = [x509.DNSName(n) for n in names]
    alt_names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    cert = (
        _builder(subject=_name(names[0]), issuer=ca_name, public_key=key.public_key(), now=now)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return CertBundle(
        cert=cert.public_bytes(serialization.Encoding.PEM),
        key=_key_pem(key),
        ca_cert=ca_cert.public_bytes(serialization.Encoding.PEM),
        ca_key=_key_pem(ca_key),
    )


def is_usable(bundle: CertBundle, *, dns_name: str, now: datetime) -> bool:
    """Whether the serving certificate parses, names ``dns_name`` and has time left to run.

    "Time left" means more than ``RENEW_BEFORE`` before it expires, so a certificate close to
    the end is replaced at the next start instead of expiring under a running server.
    """
    try:
        cert = x509.load_pem_x509_certificate(bundle.cert)
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, x509.ExtensionNotFound):
        return False
    if dns_name not in names.get_values_for_type(x509.DNSName):
        return False
    return cert.not_valid_before_utc <= now < cert.not_valid_after_utc - RENEW_BEFORE


def read_dir(cert_dir: Path) -> CertBundle | None:
    """The bundle in ``cert_dir``, or None unless both ``tls.crt`` and ``tls.key`` are there."""
    cert, key = cert_dir / CERT_FILE, cert_dir / KEY_FILE
    if not (cert.is_file() and key.is_file()):
        return None
    ca = cert_dir / CA_FILE
    return CertBundle(
        cert=cert.read_bytes(),
        key=key.read_bytes(),
        ca_cert=ca.read_bytes() if ca.is_file() else b"",
    )


def write_dir(bundle: CertBundle, cert_dir: Path) -> None:
    """Write ``tls.crt``, ``tls.key`` and ``ca.crt`` into ``cert_dir`` (created if missing).

    Each file is written next to its final name and renamed over it, so a reader never sees a
    half-written file; the key is readable by its owner only. Raises ``OSError`` when the
    directory cannot be written (a read-only Secret mount).
    """
    cert_dir.mkdir(parents=True, exist_ok=True)
    files = {CERT_FILE: bundle.cert, KEY_FILE: bundle.key, CA_FILE: bundle.ca_cert}
    for name, content in files.items():
        if not content:
            continue
        partial = cert_dir / f".{name}.partial"
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(content)
        os.replace(partial, cert_dir / name)


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANIZATION),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _builder(
    *, subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, now: datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _CLOCK_SKEW)
        .not_valid_after(now + VALIDITY)
    )


def _usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
