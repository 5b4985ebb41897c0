"""SSH between a job's pods: its key pair as a ``kubernetes.io/ssh-auth`` Secret, mounted.

The Secret holds the pair under the type's well-known keys; the volume projects it as
``id_rsa``, ``id_rsa.pub`` and ``authorized_keys``, so every pod that mounts it both holds the
key and accepts it. The pair itself is an input (``frameworks.base.SshKeys``): generating one is
random, so the controller does it. An existing Secret is rekeyed only when its data keys are not
exactly the pair. Pure. Used by ``mpi_v2beta1_objects`` and its planner.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from trainop.engine.actions import Wire
from trainop.frameworks.base import SshKeys

SECRET_TYPE = "kubernetes.io/ssh-auth"
PRIVATE_KEY, PUBLIC_KEY = "ssh-privatekey", "ssh-publickey"


def secret(metadata: Wire, keys: SshKeys) -> Wire:
    """The Secret holding ``keys``."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": SECRET_TYPE,
        "data": {
            PRIVATE_KEY: base64.b64encode(keys.private_pem.encode()).decode(),
            PUBLIC_KEY: base64.b64encode(keys.public_line.encode()).decode(),
        },
    }


def secret_needs_new_keys(secret: Mapping[str, Any]) -> bool:
    """An existing Secret is rekeyed only when its data keys are not exactly the pair."""
    return set(secret.get("data") or {}) != {PRIVATE_KEY, PUBLIC_KEY}


def volume(name: str, secret_name: str, *, owner_only: bool) -> Wire:
    """The volume with the key files; ``owner_only``: mode 0600 (else the Secret default)."""
    projected: Wire = {
        "secretName": secret_name,
        "items": [
            {"key": PRIVATE_KEY, "path": "id_rsa"},
            {"key": PUBLIC_KEY, "path": "id_rsa.pub"},
            {"key": PUBLIC_KEY, "path": "authorized_keys"},
        ],
    }
    if owner_only:
        projected["defaultMode"] = 0o600
    return {"name": name, "secret": projected}
