"""``python -m trainop.cluster.kubelet.exec.execclient POD [-n NS] [-c CONTAINER] -- COMMAND...``

Runs COMMAND inside a running container of the process kubelet (see ``execserver``): with the
container's environment and working directory, in its process group, with *this* process's
stdin, stdout and stderr; exits with COMMAND's exit code (1 and a message on stderr when the
kubelet refuses). Everything after the first ``--`` is COMMAND, verbatim. The address comes
from ``--address`` or ``TRAINOP_EXEC_ADDRESS`` and the namespace from ``-n``, ``POD_NAMESPACE``
or ``TRAINOP_NAMESPACE`` (every container has both), so an MPI launcher's rsh agent
(``kubexec.sh``, calling this as ``kubectl exec``) needs nothing else. Standard library only
(it starts once per MPI worker).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import socket
import sys
from collections.abc import Sequence
from pathlib import Path


def run(address: str, *, namespace: str, pod: str, container: str, command: list[str]) -> int:
    """Run ``command`` in the container; its exit code (``RuntimeError`` when refused)."""
    target = "\0" + address[1:] if address.startswith("@") else address
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(target)
        request = {"namespace": namespace, "pod": pod, "container": container, "command": command}
        socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = conn.recv(65536)
            if not chunk:
                raise RuntimeError("the kubelet closed the exec connection")
            reply += chunk
    answer = json.loads(reply)
    if "error" in answer:
        raise RuntimeError(str(answer["error"]))
    return int(answer["exitCode"])


def shell_command() -> str:
    """The shell words that run this client: by path, with ``python -I -S`` (standard library
    only, so neither the caller's ``PYTHONPATH`` nor its directory matter, and it starts fast).
    Local mode's MPI ``kubexec.sh`` calls it where a cluster's calls ``kubectl exec``."""
    return shlex.join([sys.executable, "-I", "-S", str(Path(__file__).resolve())])


def main(argv: Sequence[str] | None = None) -> int:
    head, command = _split(list(sys.argv[1:] if argv is None else argv))
    parser = argparse.ArgumentParser(prog="trainop-exec", description=__doc__.split("\n")[2])
    parser.add_argument("pod")
    parser.add_argument("command", nargs="*")
    parser.add_argument("-n", "--namespace", default=_namespace())
    parser.add_argument("-c", "--container", default="")
    parser.add_argument("--address", default=os.environ.get("TRAINOP_EXEC_ADDRESS", ""))
    args = parser.parse_args(head)
    command = [*args.command, *command]
    if not command:
        parser.error("no command: POD [-n NS] [-c CONTAINER] -- COMMAND...")
    if not args.address:
        parser.error("no kubelet address: pass --address or set TRAINOP_EXEC_ADDRESS")
    try:
        return run(
            args.address,
            namespace=args.namespace,
            pod=args.pod,
            container=args.container,
            command=command,
        )
    except (OSError, RuntimeError) as exc:
        sys.stderr.write(f"trainop exec: {exc}\n")
        return 1


def _split(words: list[str]) -> tuple[list[str], list[str]]:
    """Options and POD before the first ``--``; the command after it, verbatim (argparse
    would drop a later ``--`` from it). Without ``--`` the command is parsed after POD."""
    if "--" not in words:
        return words, []
    cut = words.index("--")
    return words[:cut], words[cut + 1 :]


def _namespace() -> str:
    """As kubectl in a pod: ``POD_NAMESPACE``, else the pod's own namespace, else default."""
    found = os.environ.get("POD_NAMESPACE") or os.environ.get("TRAINOP_NAMESPACE")
    return found or "default"


if __name__ == "__main__":
    sys.exit(main())
