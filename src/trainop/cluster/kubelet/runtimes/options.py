"""The container runtime's ``run`` words for what a container itself asks (note 095): the
names and labels of what a session makes, its volume mounts, the exec endpoint's mount and
its resource limits. The pod's ``securityContext`` and DNS are ``podoptions``; GPUs are
``cdi``; the network identity is ``network``; ``containers`` puts them together.

Everything a session makes carries the labels ``trainop.session=<id>`` and
``trainop.pod=<ns>/<name>`` (and the state directory and owning process id), by which
``containers`` reaps what sessions left. A ``--mount`` value is the CSV record both runtimes
parse it as, each option quoted where it must be: a ``mountPath`` is any path, and one with a
comma (``/d,source=/etc``) must never add a second option.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from trainop.cluster.kubelet.runtimes.runtime import Launch, StartWarning, Target
from trainop.engine import quantities

SESSION_LABEL = "trainop.session"
POD_LABEL = "trainop.pod"
STATE_LABEL = "trainop.state"
OWNER_LABEL = "trainop.owner"  # the process id of the session that made it
HOLDER_LABEL = "trainop.holder"  # "true" on a pod's holder (``prepare``), like kubelet's sandbox
_SAFE = str.maketrans(dict.fromkeys("/:@ ", "-"))
# Where every container sees the kubelet's exec endpoint (a socket the exec server listens on)
# and the standard-library exec and ssh clients, so an MPI launcher's rsh agent (kubexec.sh)
# starts its ranks in the worker containers through the kubelet (``podman exec`` on the host).
EXEC_MOUNT = "/run/trainop"
EXEC_SOCKET = "exec.sock"
LIMITS_IGNORED = "ResourceLimitsIgnored"  # the Warning Event's reason (``limits``)


def session_labels(session: str, state_dir: Path) -> list[str]:
    """The labels of everything the session makes (but its pods' own)."""
    return [
        "--label",
        f"{SESSION_LABEL}={session}",
        "--label",
        f"{STATE_LABEL}={state_dir}",
        "--label",
        f"{OWNER_LABEL}={os.getpid()}",
    ]


def pod_options(session: str, state_dir: Path, target: Target) -> list[str]:
    """The options of everything the session makes for a pod: its labels, and no pulls (the
    image is there by then, or the start failed)."""
    pod = f"{POD_LABEL}={target.namespace}/{target.pod}"
    return [*session_labels(session, state_dir), "--label", pod, "--pull", "never"]


def container_name(session: str, target: Target) -> str:
    """A name unique per session and container (the pod name itself is a network alias)."""
    return f"trainop-{session}-{target.namespace}-{target.pod}-{target.container}".translate(_SAFE)


def holder_name(session: str, target: Target) -> str:
    """The pod's holder's name (``_`` cannot be in a container's name, so no container's
    name is a holder's)."""
    return f"trainop-{session}-{target.namespace}-{target.pod}_pod".translate(_SAFE)


def exec_options(exec_dir: Path, namespace: str) -> list[str]:
    """The exec endpoint's directory mounted at ``EXEC_MOUNT`` and the variables its clients
    read (values not secret: on argv)."""
    endpoint = ["type=bind", f"source={exec_dir}", f"destination={EXEC_MOUNT}"]
    return [
        *("--mount", mount_value(endpoint)),
        *("--env", f"TRAINOP_EXEC_ADDRESS={EXEC_MOUNT}/{EXEC_SOCKET}"),
        *("--env", f"TRAINOP_NAMESPACE={namespace}"),
    ]


def mounts(launch: Launch) -> list[str]:
    """``--mount`` values for the container's ``volumeMounts`` (``subPath`` inside the volume)."""
    found = []
    for entry in launch.spec.get("volumeMounts") or []:
        source = launch.volumes.get(str(entry.get("name")))
        if source is None:
            continue
        if entry.get("subPath"):
            source = source / str(entry["subPath"])
        options = ["type=bind", f"source={source}", f"destination={entry['mountPath']}"]
        if entry.get("readOnly"):
            options.append("ro=true")
        found.append(mount_value(options))
    return found


def mount_value(options: Sequence[str]) -> str:
    """One ``--mount`` value: its ``key=value`` options as the CSV record both runtimes
    parse it as, each quoted where it must be, so a path with a comma or a quote (a
    ``mountPath`` is any path) stays one option and never adds another (``/d,source=/etc``)."""
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(options)
    return out.getvalue()


def limits(
    spec: Mapping[str, Any], controllers: Collection[str] | None = None, runtime: str = "podman"
) -> tuple[list[str], list[StartWarning]]:
    """``--memory`` (bytes) and ``--cpus`` from ``resources.limits`` (where set and valid),
    for the cgroup controllers podman can use (``controllers``; None: unknown, every flag);
    a limit whose controller is missing is left out and is a warning instead (podman would
    refuse to start the container: rootless cgroup v2 without delegation, cgroup v1 without
    that hierarchy)."""
    given = (spec.get("resources") or {}).get("limits") or {}
    words: list[str] = []
    warnings: list[StartWarning] = []
    for key, flag in (("memory", "--memory"), ("cpu", "--cpus")):
        if key not in given:
            continue
        amount = quantities.parse(given[key]).amount  # zero when not a quantity: no limit
        if amount <= 0:
            continue
        if controllers is not None and key not in controllers:  # the controller's name
            usable = ", ".join(sorted(controllers)) or "none"
            message = (
                f"limits.{key} {given[key]} is not applied: {runtime} cannot use the cgroup {key} "
                f"controller on this machine (usable controllers: {usable}); the container "
                "runs without this limit"
            )
            warnings.append(StartWarning(LIMITS_IGNORED, message))
            continue
        words += [flag, str(int(amount)) if key == "memory" else f"{amount:f}"]
    return words, warnings
