"""``exec``: a command runs in a running container's environment, directory and group."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests import polling
from tests.integration.cluster.kubelet.conftest import Site
from tests.integration.cluster.kubelet.harness import Local, pod, py, run_local


def exec_in(
    address: str, namespace: str, pod_name: str, *command: str
) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable,
        "-m",
        "trainop.cluster.kubelet.exec.execclient",
        "--address",
        address,
        "-n",
        namespace,
        pod_name,
        "--",
        *command,
    ]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def test_exec_runs_in_the_container_and_returns_its_exit_code(site: Site) -> None:
    waiting = py(
        "import time\nwhile True: time.sleep(0.05)",
        env=[{"name": "GREETING", "value": "hello from the pod"}],
        workingDir="/job",
    )

    async def body(env: Local) -> None:
        await env.create(pod("target", waiting))
        running = await env.wait("target", lambda p: "running" in str(p.get("status")))
        address = env.kubelet.exec_address
        code = (
            "import json, os, sys; print(json.dumps({'greeting': os.environ['GREETING'],"
            " 'cwd': os.getcwd(), 'pgid': os.getpgid(0), 'stdin': sys.stdin.read()})); sys.exit(7)"
        )
        done = await asyncio.to_thread(
            lambda: subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "trainop.cluster.kubelet.exec.execclient",
                    "--address",
                    address,
                    "-n",
                    env.namespace,
                    "target",
                    "--",
                    sys.executable,
                    "-c",
                    code,
                ],
                input="piped in",
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        )
        assert done.returncode == 7, done.stderr
        seen = json.loads(done.stdout)
        leader = env.kubelet.pod(env.namespace, "target")
        assert leader is not None
        pid = leader.state.containers[0].pid
        assert seen == {
            "greeting": "hello from the pod",
            "cwd": str(leader.sandbox.fs("main") / "job"),
            "pgid": pid,
            "stdin": "piped in",
        }
        assert running["status"]["phase"] == "Running"
        missing = await asyncio.to_thread(exec_in, address, env.namespace, "nope", "true")
        assert missing.returncode == 1
        assert 'pods "nope" not found' in missing.stderr

    run_local(site.server, site.logs, site.root, body)


def _connections(address: str) -> int:
    """Sockets bound to the kubelet's abstract address: the listener plus one per client."""
    table = Path("/proc/net/unix").read_text().splitlines()[1:]
    return sum(1 for line in table if line.split()[-1] == address)


def test_exec_waits_for_a_starting_container_and_passes_the_command_verbatim(
    site: Site, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    starting = pod(
        "starting",
        py("import time\nwhile True: time.sleep(0.05)"),
        initContainers=[{"name": "gate", "image": "sh", "command": ["cat", str(gate)]}],
    )
    show = "import os, sys; print(sys.argv[1:], os.environ['TRAINOP_NAMESPACE'])"

    async def body(env: Local) -> None:
        await env.create(starting)
        await env.wait(
            "starting", lambda p: "running" in str(p["status"].get("initContainerStatuses"))
        )
        address = env.kubelet.exec_address
        client = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "trainop.cluster.kubelet.exec.execclient", "starting",
            "--", sys.executable, "-c", show, "--", "-n", "x",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "TRAINOP_EXEC_ADDRESS": address, "TRAINOP_NAMESPACE": env.namespace},
        )  # fmt: skip
        await polling.until(
            lambda: _connections(address) >= 2 or client.returncode is not None,
            timeout=30,
            what="the exec client connected",
        )
        assert client.returncode is None, "it waits while the pod initialises"
        await asyncio.to_thread(gate.write_text, "go")
        out, err = await asyncio.wait_for(client.communicate(), timeout=30)
        assert client.returncode == 0, err
        assert out.decode().strip() == f"['--', '-n', 'x'] {env.namespace}"

    run_local(site.server, site.logs, site.root, body)


def _attach(
    address: str, namespace: str, pod_name: str
) -> tuple[socket.socket, dict[str, Any], int]:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect("\0" + address[1:])
    request = {"attach": True, "namespace": namespace, "pod": pod_name, "container": "main"}
    conn.sendall(json.dumps(request).encode() + b"\n")
    data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 1)
    return conn, json.loads(data), fds[0] if fds else -1


def attach_write(address: str, namespace: str, pod_name: str, data: bytes) -> None:
    """``attach -i``: write ``data`` to the container's stdin through the copy the kubelet
    hands over, then hang up (with ``stdinOnce`` the kubelet closes its end then)."""
    conn, answer, fd = _attach(address, namespace, pod_name)
    try:
        assert answer == {"attached": True}
        os.write(fd, data)
    finally:
        if fd >= 0:
            os.close(fd)
        conn.close()


# reads a line; exits with its length, 10 more when stdin, stdout and stderr are a terminal
TTY_LINE = (
    "import os, sys\nsys.exit(len(sys.stdin.readline()) + 10 * all(map(os.isatty, (0, 1, 2))))"
)


def test_attach_hands_over_the_stdin_of_a_stdin_container(site: Site) -> None:
    reads = "import sys\nsys.exit(len(sys.stdin.read()))"
    once = pod("once", py(reads, stdin=True, stdinOnce=True))
    plain = pod("plain", py("import time\nwhile True: time.sleep(0.05)"))
    tty = pod("tty", py(TTY_LINE, stdin=True, stdinOnce=True, tty=True))

    async def body(env: Local) -> None:
        await env.create(once)
        await env.create(plain)
        await env.create(tty)
        for name in ("once", "plain", "tty"):
            await env.wait(name, lambda p: "running" in str(p.get("status")))
        address = env.kubelet.exec_address
        # stdinOnce: the kubelet closes its end too after the attach, so the container sees EOF
        await asyncio.to_thread(attach_write, address, env.namespace, "once", b"abc")
        ended = await env.phase("once", "Failed")
        terminated = ended["status"]["containerStatuses"][0]["state"]["terminated"]
        assert terminated["exitCode"] == 3
        conn, answer, fd = await asyncio.to_thread(_attach, address, env.namespace, "plain")
        conn.close()
        assert fd == -1
        assert "stdin" in answer["error"]
        # with tty the stdio is a terminal, and stdinOnce does not close the stdin
        # (containerd's rule): a second attach completes the line the first began
        for part in (b"ab", b"c\n"):
            await asyncio.to_thread(attach_write, address, env.namespace, "tty", part)
        ended = await env.phase("tty", "Failed")
        assert ended["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 14

    run_local(site.server, site.logs, site.root, body)
