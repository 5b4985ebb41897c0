"""A container's image as kubelet treats it (note 095): pull policy, the pull and its events,
the image's config and its entrypoint and cmd, and the pod holders' pause image.

``ensure`` has the image as ``imagePullPolicy`` says (a ``StartError`` with ``image=`` when it
cannot be had: ``ErrImageNeverPull``, ``ErrImagePull``), reporting kubelet's events
(``Pulling``, ``Pulled`` with how long the pull took and the image's size); ``combine`` is
kubelet's rule for the argv from the image's entrypoint and cmd and the container's
``command``/``args``. A manifest's ``image`` is untrusted argv: every call names it after
``--``. ``import_pause`` makes ``PAUSE_IMAGE`` from the machine's own ``catatonit`` (no
registry, no pause image to pull), for the pod holders of ``network``. Neighbours:
``containers`` (the runtime that uses these), ``containercli`` (the calls).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import tarfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trainop.api import images as api_images
from trainop.cluster.kubelet.runtimes import containercli
from trainop.cluster.kubelet.runtimes.runtime import Report, StartError

log = logging.getLogger(__name__)

# A pod's holder runs ``catatonit -P`` (it only waits) from an image trainop imports from the
# machine's own binary: no registry, no pause image to pull.
PAUSE_BINARY = "catatonit"
PAUSE_PATHS = ("/usr/libexec/podman/catatonit", "/usr/libexec/catatonit/catatonit")
PAUSE_IMAGE = "localhost/trainop-pause:1"


def pull_policy(spec: Mapping[str, Any]) -> str:
    """The container's ``imagePullPolicy``, defaulted by the API server's own rule (a pod
    stored before the server defaulted it has none)."""
    given = spec.get("imagePullPolicy")
    if given:
        return str(given)
    return api_images.pull_policy(str(spec.get("image") or ""))


async def ensure(
    cli: containercli.Cli, image: str, policy: str, report: Report, *, present: bool | None = None
) -> float | None:
    """Have ``image`` as ``policy`` says, with kubelet's events: how long a pull took,
    None when the image was there already (``StartError`` when it cannot be had).
    ``present``: whether the caller's ``inspect`` found it (one runtime call fewer), else
    ``image exists`` asks."""
    if present is None:
        present = (await cli.call(*cli.image_exists_words(image))).code == 0
    if policy == "Never" and not present:
        message = f'Container image "{image}" is not present with pull policy of Never'
        raise StartError("ErrImageNeverPull", "ErrImageNeverPull", message, image=image)
    if present and policy != "Always":
        report("Normal", "Pulled", f'Container image "{image}" already present on machine')
        return None
    report("Normal", "Pulling", f'Pulling image "{image}"')
    began = time.monotonic()
    reply = await cli.call("pull", "--quiet", "--", image)  # never an option
    if reply.code != 0:
        message = f'failed to pull image "{image}": {reply.last_line}'
        raise StartError("ErrImagePull", "ErrImagePull", message, image=image)
    return time.monotonic() - began


async def inspect(cli: containercli.Cli, image: str) -> Mapping[str, Any]:
    """The image as ``image inspect`` shows it ({} when unknown)."""
    return containercli.first_object(await cli.json("image", *cli.inspect_words(image)))


def config_of(found: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``Config`` of an inspected image ({} when unknown)."""
    given = found.get("Config")
    return given if isinstance(given, dict) else {}


def size_of(found: Mapping[str, Any]) -> int:
    """The size in bytes of an inspected image (0 when unknown)."""
    given = found.get("Size")
    return given if isinstance(given, int) and not isinstance(given, bool) else 0


def combine(config: Mapping[str, Any], *, command: Sequence[str], args: Sequence[str]) -> list[str]:
    """The argv kubelet runs: ``command`` replaces the image's entrypoint (and its cmd),
    ``args`` replaces the image's cmd."""
    entrypoint = [str(w) for w in config.get("Entrypoint") or []]
    cmd = [str(w) for w in config.get("Cmd") or []]
    if command:
        return [*command, *args]
    return [*entrypoint, *(args or cmd)]


def pulled_message(image: str, seconds: float, size: int) -> str:
    """kubelet's ``Pulled`` message after a pull (one pull at a time here, so the time
    including waiting is the pull's own)."""
    took = go_duration(seconds)
    return (
        f'Successfully pulled image "{image}" in {took} ({took} including waiting). '
        f"Image size: {size} bytes."
    )


def go_duration(seconds: float) -> str:
    """A duration as Go prints a ``time.Duration`` truncated to milliseconds (``532ms``,
    ``1.2s``, ``2m3.456s``), as kubelet's events show it."""
    millis = max(0, int(seconds * 1000))
    if millis == 0:
        return "0s"
    if millis < 1000:
        return f"{millis}ms"
    minutes, millis = divmod(millis, 60_000)
    hours, minutes = divmod(minutes, 60)
    secs = f"{millis // 1000}.{millis % 1000:03d}".rstrip("0").rstrip(".")
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


# --- the pod holders' image -----------------------------------------------------------------


async def import_pause(cli: containercli.Cli) -> str:
    """``PAUSE_IMAGE``, imported from the machine's ``catatonit`` (a static init whose ``-P``
    only waits: what a pod's holder runs) unless it is there; "" where it cannot be had."""
    if (await cli.call(*cli.image_exists_words(PAUSE_IMAGE))).code == 0:
        return PAUSE_IMAGE
    binary = find_pause_binary()
    if binary is None:
        return ""
    archive = cli.workdir() / "pause.tar"
    await asyncio.to_thread(_pause_archive, binary, archive)
    change = f"ENTRYPOINT {json.dumps(['/' + PAUSE_BINARY, '-P'])}"
    reply = await cli.call("import", "--change", change, str(archive), PAUSE_IMAGE)
    archive.unlink(missing_ok=True)
    if reply.code != 0:
        log.warning("cannot import %s: %s", PAUSE_IMAGE, reply.message)
        return ""
    return PAUSE_IMAGE


def find_pause_binary() -> Path | None:
    """The machine's ``catatonit`` (Podman's own init, a static binary), None without one."""
    for candidate in (shutil.which(PAUSE_BINARY), *PAUSE_PATHS):
        if candidate and os.access(candidate, os.X_OK):
            return Path(candidate)
    return None


def _pause_archive(binary: Path, archive: Path) -> None:
    """A root filesystem of one file, ``/catatonit``, as a tar ``import`` reads."""

    def owned_by_root(entry: tarfile.TarInfo) -> tarfile.TarInfo:
        entry.uid = entry.gid = 0
        entry.uname = entry.gname = "root"
        entry.mode = 0o755
        return entry

    with tarfile.open(archive, "w") as tar:  # the file itself, not a link to it
        tar.add(binary.resolve(), arcname=PAUSE_BINARY, recursive=False, filter=owned_by_root)
