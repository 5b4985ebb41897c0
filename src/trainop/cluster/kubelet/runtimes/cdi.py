"""GPUs as CDI devices for the container runtime (note 095): the ``--device`` words of the
GPUs a run holds, and the check that a CDI spec defines each of them.

Podman (4.1 and later) injects a CDI device named on ``--device`` from the specs in
``CDI_DIRS`` (4.3 reads only these two), as the NVIDIA Container Toolkit writes them; the
toolkit's kind is the resource's name (``gpus.RESOURCE``), its devices are named by index. A
held GPU that no spec defines is a start error naming the fix (``CDI_FIX``), as containerd's
failed injection on a cluster. Neighbours: ``gpus`` (the pool that holds them), ``containers``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml

from trainop.cluster.kubelet import gpus
from trainop.cluster.kubelet.runtimes.runtime import StartError

CDI_DIRS = (Path("/etc/cdi"), Path("/var/run/cdi"))
CDI_FIX = "nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"
_CDI_SUFFIXES = (".yaml", ".json")


def device_options(devices: Sequence[str]) -> list[str]:
    """``--device nvidia.com/gpu=<index>`` for each GPU the run holds (none: no device, as on
    a cluster a container that asks for no GPU sees none)."""
    words = []
    for device in devices:
        words += ["--device", f"{gpus.RESOURCE}={device}"]
    return words


def cdi_devices(kind: str, dirs: Sequence[Path] = CDI_DIRS) -> set[str]:
    """The names of the devices that the CDI spec files in ``dirs`` define for ``kind`` (a
    file that cannot be read or parsed defines none)."""
    found: set[str] = set()
    for directory in dirs:
        try:
            files = sorted(p for p in directory.iterdir() if p.suffix in _CDI_SUFFIXES)
        except OSError:
            continue
        for path in files:
            try:
                spec = yaml.safe_load(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, yaml.YAMLError):
                continue
            if not isinstance(spec, dict) or spec.get("kind") != kind:
                continue
            for device in spec.get("devices") or []:
                if isinstance(device, dict) and device.get("name") is not None:
                    found.add(str(device["name"]))
    return found


def check_devices(devices: Sequence[str], dirs: Sequence[Path] = CDI_DIRS) -> None:
    """A ``StartError`` (``CreateContainerError``, as containerd's failed CDI injection on a
    cluster) naming the fix, when a GPU the run holds has no CDI spec podman could use."""
    if not devices:
        return
    defined = cdi_devices(gpus.RESOURCE, dirs)
    missing = [f"{gpus.RESOURCE}={d}" for d in devices if d not in defined]
    if missing:
        where = " or ".join(str(d) for d in dirs)
        message = (
            f"CDI device injection failed: unresolvable CDI devices {', '.join(missing)}: no "
            f"CDI spec in {where} defines them; make one with `{CDI_FIX}`"
        )
        raise StartError("ContainerCannotRun", "CreateContainerError", message)
