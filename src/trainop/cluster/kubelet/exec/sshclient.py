"""``ssh [OPTIONS] HOST COMMAND...`` for MPIJob v2beta1 launchers in the process kubelet.

A v2beta1 launcher reaches its workers with plain ``ssh <fqdn> <command>`` (mpi-v2beta1-spec
3.2); the process kubelet runs no sshd and no DNS, so local mode points the MPI
implementation's remote shell at this instead (``OMPI_MCA_plm_rsh_agent``): it skips ssh's
options, reads the pod and namespace from ``<pod>.<job>.<ns>.svc[...]`` (a bare name is a pod
in the caller's namespace) and runs COMMAND there through the kubelet's exec
(``execclient``), as ``sh -c`` would on a remote host. Standard library only (it starts once
per MPI worker).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

try:
    from trainop.cluster.kubelet.exec import execclient
except ImportError:  # run by path with ``python -I -S``: execclient is its neighbour
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import execclient  # type: ignore[no-redef,import-not-found,unused-ignore]

# ssh options that take a value (OpenSSH ``ssh(1)``).
_WITH_VALUE = frozenset("BbcDEeFIiJLlmOoPpQRSWw")


def parse(argv: Sequence[str]) -> tuple[str, str, list[str]]:
    """(pod, namespace or '', command words) from ssh's command line."""
    words = list(argv)
    index = 0
    while index < len(words) and words[index].startswith("-") and words[index] != "--":
        option = words[index]
        takes_value = len(option) == 2 and option[1] in _WITH_VALUE
        index += 2 if takes_value else 1
    if index < len(words) and words[index] == "--":
        index += 1
    if index >= len(words):
        raise SystemExit("ssh (trainop local): no host given")
    host = words[index].rpartition("@")[2]
    labels = host.split(".")
    namespace = labels[2] if len(labels) >= 4 and labels[3] == "svc" else ""
    return labels[0], namespace, words[index + 1 :]


def shell_command() -> str:
    """The shell words that run this client (for ``OMPI_MCA_plm_rsh_agent``)."""
    return shlex.join([sys.executable, "-I", "-S", str(Path(__file__).resolve())])


def main(argv: Sequence[str] | None = None) -> int:
    pod, namespace, command = parse(sys.argv[1:] if argv is None else argv)
    address = os.environ.get("TRAINOP_EXEC_ADDRESS", "")
    try:
        return execclient.run(
            address,
            namespace=namespace or execclient._namespace(),
            pod=pod,
            container="",
            command=["/bin/sh", "-c", " ".join(command)],
        )
    except (OSError, RuntimeError) as exc:
        sys.stderr.write(f"ssh (trainop local): {pod}: {exc}\n")
        return 255


if __name__ == "__main__":
    sys.exit(main())
