"""``python -m trainop.local.kubelet.execclient POD [-n NS] [-c CONTAINER] -- COMMAND...``

Runs COMMAND inside a running container of the process kubelet (see ``execserver``): with the
container's environment and working directory, in its process group, with *this* process's
stdin, stdout and stderr; exits with COMMAND's exit code (1 and a message on stderr when the
kubelet refuses). The address comes from ``--address`` or ``TRAINOP_EXEC_ADDRESS``, which
every container has, so an MPI launcher's rsh agent needs nothing else. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
from collections.abc import Sequence


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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="trainop-exec", description=__doc__.split("\n")[2])
    parser.add_argument("pod")
    parser.add_argument("command", nargs="+")
    parser.add_argument("-n", "--namespace", default=os.environ.get("POD_NAMESPACE", "default"))
    parser.add_argument("-c", "--container", default="")
    parser.add_argument("--address", default=os.environ.get("TRAINOP_EXEC_ADDRESS", ""))
    args = parser.parse_args(argv)
    if not args.address:
        parser.error("no kubelet address: pass --address or set TRAINOP_EXEC_ADDRESS")
    try:
        return run(
            args.address,
            namespace=args.namespace,
            pod=args.pod,
            container=args.container,
            command=list(args.command),
        )
    except (OSError, RuntimeError) as exc:
        sys.stderr.write(f"trainop exec: {exc}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
