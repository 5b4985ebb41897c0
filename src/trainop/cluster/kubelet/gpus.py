"""GPUs: found with ``nvidia-smi -L``, held per container, shown to it by its runtime.

A container's ``nvidia.com/gpu`` limit (or request) asks for that many devices, held
exclusively from its first start until it is done for good (restarts keep them). When fewer
are free, the container waits (``ContainerCreating``, the message says how many are free)
until another container gives some back. A host process sees the devices it holds as
``CUDA_VISIBLE_DEVICES`` (``variables``); a Podman container gets those the machine has as CDI
devices ``nvidia.com/gpu=<index>`` (``Launch.devices``, ``present_of``, ``containers``): a slot
declared beyond them (``--gpus``) is held but has no device, so its container runs on CPU. On
a machine with GPUs, a container that asks for none gets ``CUDA_VISIBLE_DEVICES=""`` or no
device (as on a cluster, it sees none), and one that asks for more than the machine has fails
the pod (``UnexpectedAdmissionError``, as kubelet's device manager). On a machine without GPUs
(or without ``nvidia-smi``) and no ``--gpus``, all of this is a no-op: the variable is left
unset, no device is passed and a GPU request is ignored (it holds nothing), so GPU manifests
still run on CPU.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
from typing import Any

RESOURCE = "nvidia.com/gpu"
_LINE = re.compile(r"^GPU (\d+):")


def detect() -> tuple[str, ...]:
    """Indices of the GPUs ``nvidia-smi -L`` lists (none when it is absent or fails)."""
    binary = shutil.which("nvidia-smi")
    if binary is None:
        return ()
    try:
        listed = subprocess.run(
            [binary, "-L"], capture_output=True, text=True, timeout=20, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(m.group(1) for line in listed.splitlines() if (m := _LINE.match(line)))


def wanted(container: dict[str, Any]) -> int:
    """How many GPUs the container asks for."""
    resources = container.get("resources") or {}
    value = (resources.get("limits") or {}).get(RESOURCE) or (resources.get("requests") or {}).get(
        RESOURCE
    )
    try:
        return int(str(value)) if value is not None else 0
    except ValueError:
        return 0


class GpuPool:
    """The machine's GPUs and which are free (one event loop)."""

    def __init__(self, devices: tuple[str, ...], *, present: tuple[str, ...] | None = None) -> None:
        self.devices = devices
        self._present = frozenset(devices if present is None else present)  # found by ``detect``
        self._free = list(devices)
        self._released = asyncio.Event()

    @property
    def free(self) -> int:
        return len(self._free)

    def take(self, count: int) -> list[str] | None:
        """``count`` devices, or None when fewer are free (none on a machine without GPUs:
        the request is ignored)."""
        if not self.devices:
            return []
        if count > len(self._free):
            self._released.clear()
            return None
        taken, self._free = self._free[:count], self._free[count:]
        return taken

    async def released(self) -> None:
        """Wait until devices are given back."""
        await self._released.wait()

    def give_back(self, devices: list[str]) -> None:
        self._free.extend(d for d in devices if d not in self._free)
        self._released.set()

    def present_of(self, devices: list[str]) -> tuple[str, ...]:
        """Those of ``devices`` the machine has (a runtime can hand them to a container)."""
        return tuple(d for d in devices if d in self._present)

    def variables(self, devices: list[str] | None) -> dict[str, str]:
        """``CUDA_VISIBLE_DEVICES`` for a container holding ``devices`` (see the docstring)."""
        if not self.devices:
            return {}
        return {"CUDA_VISIBLE_DEVICES": ",".join(devices or [])}
