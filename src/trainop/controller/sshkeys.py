"""The per-job SSH key pair of MPIJob v2beta1 (mpi-v2beta1-spec 2.3).

One ECDSA P-521 key per job, shared by the launcher and every worker: the private key as an
unencrypted SEC1 PEM block (``EC PRIVATE KEY``), the public key as an OpenSSH authorized-keys
line without a comment. Random, hence here and not in the pure plugin
(``frameworks.mpi_v2beta1`` takes the pair as an input).
"""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from trainop.frameworks.mpi_v2beta1 import SshKeys


def new_key_pair() -> SshKeys:
    """A fresh key pair in the formats the ``<job>-ssh`` Secret holds."""
    key = ec.generate_private_key(ec.SECP521R1())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    public = key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    return SshKeys(private.decode(), public.decode() + "\n")
