"""The CRDs a local session installs, built once per version of their inputs and kept on disk.

Building the job kinds' and Trainer's CRDs from the pydantic models and the official
Kubernetes schemas costs 0.3-0.5 s of CPU at every ``trainop run`` (more under load: pydantic's
JSON-schema generation and the ``$ref`` inlining of ``api.k8s_schema``), for 4 MB of output that
only changes when the code that makes it changes. ``session_crds`` returns that output from a
JSON file under the user's cache directory (``$TRAINOP_CACHE_DIR``, else
``$XDG_CACHE_HOME/trainop``, else ``~/.cache/trainop``) when one exists for the same inputs, else
builds it and writes the file for the next session.

The key is a digest of every source file of ``trainop.api`` (the models, ``crds``,
``k8s_schema``, the Trainer CRDs), of ``cluster.apiserver.schemas`` and of the official
definitions file, so an edit to any of them builds afresh; the output is deterministic
(``tests/unit/api/test_crds.py``), so a hit is byte for byte what a build would give. A cache
that cannot be read or written is no error: the session builds, as it did before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kubernetes_validate

import trainop.api
from trainop.api import k8s_schema
from trainop.api.trainer import crds as trainer_crds
from trainop.cluster.apiserver import schemas

CACHE_ENV = "TRAINOP_CACHE_DIR"
Build = Callable[[], list[dict[str, Any]]]


def cache_dir() -> Path:
    """Where the built CRDs are kept (see the module docstring)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "trainop"


def build_session_crds() -> list[dict[str, Any]]:
    """Every CRD a session installs: the job kinds', then those of Trainer's kinds and JobSet's
    that the job kinds do not already name."""
    definitions = schemas.load_definitions()
    wanted = schemas.crds(definitions)
    names = {crd["metadata"]["name"] for crd in wanted}
    extra = trainer_crds.build_crds(definitions)
    return wanted + [crd for crd in extra if crd["metadata"]["name"] not in names]


def inputs_digest() -> str:
    """A digest of everything ``build_session_crds`` reads."""
    digest = hashlib.sha256(k8s_schema.KUBERNETES_VERSION.encode())
    package = Path(trainop.api.__file__).parent
    named = [(str(p.relative_to(package)), p) for p in sorted(package.rglob("*.py"))]
    named += [("schemas.py", Path(schemas.__file__)), ("definitions", _definitions_file())]
    for name, path in named:
        digest.update(name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:32]


def session_crds(
    directory: Path | None = None, *, build: Build = build_session_crds
) -> list[dict[str, Any]]:
    """The session's CRDs: from the cache in ``directory`` (default ``cache_dir()``) when it
    holds them for the current inputs, else built by ``build`` and stored there."""
    try:
        path = (directory or cache_dir()) / f"crds-{inputs_digest()}.json"
    except OSError:
        return build()
    with contextlib.suppress(OSError, ValueError):
        loaded = json.loads(path.read_bytes())
        if isinstance(loaded, list) and all(isinstance(crd, dict) for crd in loaded):
            return loaded
    built = build()
    with contextlib.suppress(OSError):
        _write(path, json.dumps(built, separators=(",", ":")).encode())
    return built


def _write(path: Path, data: bytes) -> None:
    """Replace ``path`` at once (a concurrent session reads the old file or the new one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=".crds-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(scratch, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        raise


def _definitions_file() -> Path:
    package = Path(kubernetes_validate.__file__).parent
    version = k8s_schema.KUBERNETES_VERSION
    return package / "kubernetes-json-schema" / f"{version}-local" / "_definitions.json"
