"""The v2beta1 SSH key pair: ECDSA P-521, SEC1 PEM private key, OpenSSH public line."""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from trainop.controller.sshkeys import new_key_pair


def test_a_fresh_p521_pair_in_the_secret_formats() -> None:
    keys = new_key_pair()
    assert keys.private_pem.startswith("-----BEGIN EC PRIVATE KEY-----\n")
    private = serialization.load_pem_private_key(keys.private_pem.encode(), password=None)
    assert isinstance(private, ec.EllipticCurvePrivateKey)
    assert private.curve.name == "secp521r1"
    kind, body, *rest = keys.public_line.split(" ")
    assert (kind, rest) == ("ecdsa-sha2-nistp521", [])
    assert keys.public_line.endswith("\n")
    public = serialization.load_ssh_public_key(keys.public_line.strip().encode())
    assert public.public_numbers() == private.public_key().public_numbers()
    assert new_key_pair().private_pem != keys.private_pem  # one pair per job
    del body
