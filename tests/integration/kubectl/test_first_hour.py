"""The rest of kubectl's first hour with the real binary: events in ``describe`` and
``kubectl events``, ``logs --since``, ``auth can-i``/``whoami``, the default ServiceAccount,
Secret ``stringData``, strict validation of built-in kinds, ``get nodes``, and ``exec``."""

from __future__ import annotations

import asyncio
import base64
import json
import re
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.stream import stream

from tests import polling
from tests.integration.cluster.apiserver import rawhttps
from tests.integration.kubectl.conftest import (
    QUICK,
    STUBBORN,
    Kubectl,
    one_master_job,
    started,
    write,
)
from trainop.cluster.apiserver.http import tls


def _needs(kubectl: Kubectl, minor: int, what: str) -> None:
    """Skip unless kubectl is 1.``minor`` or newer (older ones stream ``what`` over SPDY)."""
    version = json.loads(kubectl.out("version", "--client", "-o", "json"))["clientVersion"]
    have = int("".join(ch for ch in version.get("minor", "0") if ch.isdigit()) or 0)
    if have < minor:
        pytest.skip(f"kubectl 1.{have} streams {what} over SPDY; local mode needs WebSocket")


def _eventually(read: Callable[[], str], *needles: str, timeout: float = 30) -> str:
    """``read()``'s text once it contains every one of ``needles``."""

    def probe() -> str | polling.NotYet:
        text = read()
        return text if all(n in text for n in needles) else polling.NotYet(text)

    found: str = polling.wait_for(probe, timeout=timeout, what=repr(needles), interval=0.2)
    return found


def test_describe_and_events_show_the_jobs_events(
    kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, QUICK))
    kubectl.run("wait", "-n", ns, "--for=condition=Succeeded", "pytorchjob/quick", "--timeout=60s")
    # Events are recorded in the background: poll until they are there.
    described = _eventually(
        lambda: kubectl.out("describe", "-n", ns, "pytorchjob", "quick"), "SuccessfulCreatePod"
    )
    events = described.split("Events:", 1)[1]
    assert "SuccessfulCreatePod" in events, described
    listed = kubectl.out("events", "-n", ns, "--for", "pytorchjob/quick")
    assert listed.splitlines()[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert "SuccessfulCreatePod" in listed
    assert "PyTorchJob/quick" in listed
    # A pod's events (the kubelet's, or here one recorded by hand) show in describe pod.
    uid = kubectl.out("get", "pod", "-n", ns, "quick-master-0", "-o", "jsonpath={.metadata.uid}")
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "quick-master-0.hand"},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "quick-master-0",
            "namespace": ns,
            "uid": uid,
        },
        "reason": "HandWritten",
        "message": "recorded by the test",
        "type": "Warning",
        "source": {"component": "kubelet"},
    }
    kubectl.run("create", "-n", ns, "-f", write(tmp_path, json.dumps(event), "event.json"))
    pod = _eventually(
        lambda: kubectl.out("describe", "-n", ns, "pod", "quick-master-0"), "Started", "HandWritten"
    )
    assert "HandWritten" in pod.split("Events:", 1)[1]
    for reason in ("Scheduled", "Created", "Started"):  # the scheduler's and kubelet's own
        assert reason in pod.split("Events:", 1)[1], pod
    assert "SuccessfulCreatePod" not in pod.split("Events:", 1)[1]
    # The operator's port has no protocol; the server defaults it, as a cluster does.
    assert re.search(r"\n\s+Port:\s+23456/TCP\n", pod), pod
    assert re.search(r"node.kubernetes.io/not-ready:NoExecute op=Exists for 300s", pod), pod
    warnings = kubectl.out("events", "-n", ns, "--types=Warning")
    assert "HandWritten" in warnings
    assert "SuccessfulCreatePod" not in warnings


def test_logs_since(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, QUICK))
    kubectl.run("wait", "-n", ns, "--for=condition=Succeeded", "pytorchjob/quick", "--timeout=60s")
    assert kubectl.out("logs", "-n", ns, "quick-master-0", "--since=1h") == "1\n"
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
    assert kubectl.out("logs", "-n", ns, "quick-master-0", f"--since-time={since}") == ""
    done = kubectl.run("exec", "-n", ns, "quick-master-0", "--", "true", check=False)
    assert done.returncode == 1
    assert (
        "cannot exec into a container in a completed pod; current phase is Succeeded" in done.stderr
    )


def test_auth_can_i_and_whoami(kubectl: Kubectl) -> None:
    assert kubectl.out("auth", "can-i", "create", "pytorchjobs").strip() == "yes"
    assert kubectl.out("auth", "can-i", "delete", "pods", "-n", "kube-system").strip() == "yes"
    listed = kubectl.out("auth", "can-i", "--list")
    assert listed.splitlines()[0].split()[:2] == ["Resources", "Non-Resource"]
    assert "*.*" in listed
    whoami = kubectl.out("auth", "whoami")
    assert "trainop-local" in whoami
    assert "system:masters" in whoami


def test_default_service_account(kubectl: Kubectl, ns: str) -> None:

    def listed() -> subprocess.CompletedProcess[str] | polling.NotYet:
        done = kubectl.run("get", "serviceaccount", "default", "-n", ns, check=False)
        return done if done.returncode == 0 else polling.NotYet(done.stderr)

    done = polling.wait_for(listed, timeout=20, what="the default ServiceAccount", interval=0.2)
    assert done.stdout.splitlines()[0].split() == ["NAME", "SECRETS", "AGE"]
    assert done.stdout.splitlines()[1].split()[:2] == ["default", "0"]


def test_secret_string_data(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds"},
        "stringData": {"token": "hunter2"},
    }
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, json.dumps(secret), "s.json"))
    data = kubectl.out("get", "secret", "creds", "-n", ns, "-o", "jsonpath={.data.token}")
    assert base64.b64decode(data) == b"hunter2"
    assert kubectl.out("get", "secret", "creds", "-n", ns, "-o", "jsonpath={.stringData}") == ""


def test_strict_validation_of_a_builtin_kind(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "typo"},
        "dataa": {"a": "1"},
    }
    path = write(tmp_path, json.dumps(config), "cm.json")
    done = kubectl.run("create", "-n", ns, "-f", path, check=False)
    assert done.returncode == 1
    assert 'strict decoding error: unknown field "dataa"' in done.stderr
    warned = kubectl.run("create", "--validate=warn", "-n", ns, "-f", path)
    assert 'Warning: unknown field "dataa"' in warned.stderr
    assert "configmap/typo created" in warned.stdout


def test_pod_deletion_honours_the_grace_period(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    for name in ("slow", "forced"):
        kubectl.run("apply", "-n", ns, "-f", write(tmp_path, STUBBORN.format(name=name), name))
    for name in ("slow", "forced"):
        started(kubectl, ns, name)
    began = time.monotonic()
    kubectl.run("delete", "pod", "slow", "-n", ns, "--grace-period=3", "--wait=false")
    stamp = kubectl.out(
        "get", "pod", "slow", "-n", ns, "-o", "jsonpath={.metadata.deletionTimestamp}"
    )
    assert stamp  # shown while the kubelet stops it
    kubectl.run("wait", "--for=delete", "pod/slow", "-n", ns, "--timeout=30s")
    assert time.monotonic() - began >= 2.5  # SIGTERM was ignored: SIGKILL after the grace period
    kubectl.run("delete", "pod", "forced", "-n", ns, "--grace-period=0", "--force")
    gone = kubectl.run("get", "pod", "forced", "-n", ns, check=False)
    assert gone.returncode == 1
    assert "NotFound" in gone.stderr


def test_get_nodes_shows_the_local_node(kubectl: Kubectl) -> None:
    listed = _eventually(lambda: kubectl.out("get", "nodes"), "trainop-local")
    rows = listed.splitlines()
    assert rows[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert rows[1].split()[:3] == ["trainop-local", "Ready", "<none>"]
    assert rows[1].split()[4] == "v1.31.0-trainop"
    capacity = json.loads(
        kubectl.out("get", "node", "trainop-local", "-o", "jsonpath={.status.allocatable}")
    )
    assert int(capacity["cpu"]) >= 1
    assert capacity["memory"].endswith("Ki")
    described = kubectl.out("describe", "node", "trainop-local")
    assert "KubeletReady" in described
    assert "HolderIdentity:  trainop-local" in described  # the node's Lease
    leases = kubectl.out("get", "leases", "-n", "kube-node-lease")
    assert leases.splitlines()[0].split() == ["NAME", "HOLDER", "AGE"]


def test_exec_into_a_running_container(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    _needs(kubectl, 30, "exec")
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, STUBBORN.format(name="box"), "box"))
    started(kubectl, ns, "box")
    hostname = Path("/etc/hostname").read_text()
    assert kubectl.out("exec", "-n", ns, "box", "--", "cat", "/etc/hostname") == hostname
    echoed = kubectl.run(
        "exec", "-i", "-n", ns, "box", "--", "sh", "-c", "read x; echo got $x", stdin="hello\n"
    )
    assert echoed.stdout == "got hello\n"
    counted = kubectl.run("exec", "-i", "-n", ns, "box", "--", "wc", "-c", stdin="x" * 100_000)
    assert counted.stdout.strip() == "100000"  # stdin's end reaches the command (v5 close)
    failed = kubectl.run(
        "exec", "-n", ns, "box", "--", "sh", "-c", "echo oops >&2; exit 3", check=False
    )
    assert failed.returncode == 3
    assert "oops" in failed.stderr
    env = kubectl.out("exec", "-n", ns, "box", "--", "sh", "-c", "echo $GREETING")
    assert env == "from-the-pod\n"  # runs with the container's environment
    missing = kubectl.run("exec", "-n", ns, "box", "-c", "nope", "--", "true", check=False)
    assert missing.returncode == 1
    assert "container nope is not valid for pod box" in missing.stderr


def test_cp_rides_on_exec(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    _needs(kubectl, 30, "exec")
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, STUBBORN.format(name="cpbox"), "cpbox"))
    started(kubectl, ns, "cpbox")
    source = tmp_path / "source.txt"
    source.write_text("".join(f"payload {i}\n" for i in range(400_000)))  # ~5 MB
    inside = tmp_path / "inside"
    inside.mkdir()
    kubectl.run("cp", str(source), f"{ns}/cpbox:{inside}/copied.txt")
    assert (inside / "copied.txt").read_text() == source.read_text()
    back = tmp_path / "back.txt"
    kubectl.run("cp", f"{ns}/cpbox:{inside}/copied.txt", str(back))
    assert back.read_text() == source.read_text()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


SERVER = """
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  nodeName: trainop-local
  containers:
    - name: main
      image: python:3.11
      command: [python, -u, -c, "{code}"]
"""
SERVE = (
    "import http.server as h; s = h.ThreadingHTTPServer(('127.0.0.1', {port}), "
    "h.SimpleHTTPRequestHandler); print('ready', flush=True); s.serve_forever()"
)


def _port_forward(kubectl: Kubectl, ns: str, target: str, ports: str) -> subprocess.Popen[str]:
    """Starts ``kubectl port-forward`` in the background, its output piped for the caller."""
    return subprocess.Popen(
        [kubectl.binary, "port-forward", "-n", ns, target, ports],
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_port_forward_reaches_the_pods_port(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    _needs(kubectl, 31, "port-forward")
    remote, local = _free_port(), _free_port()
    (tmp_path / "hello.txt").write_text("hello through port-forward\n")
    pod = SERVER.format(code=SERVE.format(port=remote))
    pod = pod.replace("    - name: main\n", f"    - name: main\n      workingDir: {tmp_path}\n")
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, pod, "web.yaml"))
    started(kubectl, ns, "web")
    forward = _port_forward(kubectl, ns, "pod/web", f"{local}:{remote}")
    try:

        def fetched() -> str | polling.NotYet:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{local}/hello.txt", timeout=5) as r:
                    return str(r.read().decode())
            except OSError as error:
                assert forward.poll() is None, forward.communicate()
                return polling.NotYet(error)

        body = polling.wait_for(fetched, timeout=30, what="port-forward answered", interval=0.3)
        assert body == "hello through port-forward\n"
        for _ in range(3):  # one SPDY connection, a stream pair per TCP connection
            with urllib.request.urlopen(f"http://127.0.0.1:{local}/hello.txt", timeout=5) as r:
                assert r.read().decode() == body
    finally:
        forward.terminate()
        out, err = forward.communicate(timeout=10)
    assert f"Forwarding from 127.0.0.1:{local} -> {remote}" in out, (out, err)
    closed, local = _free_port(), _free_port()  # nothing listens on ``closed``
    forward = _port_forward(kubectl, ns, "pod/web", f"{local}:{closed}")
    try:

        def answered() -> bool | polling.NotYet:
            try:
                with socket.create_connection(("127.0.0.1", local), timeout=5) as conn:
                    conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
                    conn.recv(100)
            except OSError as error:
                return polling.NotYet(error)
            return True

        polling.wait_for(answered, timeout=30, what="port-forward listened", interval=0.3)
    finally:  # kubectl logs the error before it closes the local connection
        forward.terminate()
        out, err = forward.communicate(timeout=10)
    assert f"error forwarding port {closed} to pod" in err, (out, err)


async def _stream(kubeconfig: Path, path: str, protocol: str, send: list[bytes]) -> list[bytes]:
    """Open ``path`` as kubectl does (a WebSocket with ``protocol``), send ``send``, and
    return every message until the server closes."""
    endpoint = rawhttps.Endpoint.load(kubeconfig)
    context = tls.client_context(endpoint.ca_pem)
    url = f"https://{endpoint.host}:{endpoint.port}{path}"
    headers = {"Authorization": f"Bearer {endpoint.token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(url, protocols=(protocol,), headers=headers, ssl=context) as ws,
    ):
        assert ws.protocol == protocol
        for message in send:
            await ws.send_bytes(message)
        return [msg.data async for msg in ws if msg.type == aiohttp.WSMsgType.BINARY]


def test_exec_with_a_terminal_over_v4(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, STUBBORN.format(name="term"), "term"))
    started(kubectl, ns, "term")
    query = "command=sh&command=-c&command=stty+size;+tty+-s+%26%26+echo+terminal;+exit+4"
    path = f"/api/v1/namespaces/{ns}/pods/term/exec?{query}&stdout=true&tty=true&stdin=true"
    resize = bytes([4]) + json.dumps({"Width": 123, "Height": 45}).encode()
    got = asyncio.run(_stream(Path(kubectl.env["KUBECONFIG"]), path, "v4.channel.k8s.io", [resize]))
    output = b"".join(m[1:] for m in got if m[0] == 1).decode()
    assert "45 123" in output
    assert "terminal" in output
    assert not [m for m in got if m[0] == 2]  # a terminal has no separate stderr
    final = json.loads(got[-1][1:])
    assert got[-1][0] == 3
    assert final["reason"] == "NonZeroExitCode"
    assert final["details"]["causes"] == [{"reason": "ExitCode", "message": "4"}]


def test_attach_follows_output_and_spdy_gets_a_status(
    kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    _needs(kubectl, 30, "attach")
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, STUBBORN.format(name="att"), "att"))
    started(kubectl, ns, "att")
    endpoint = rawhttps.Endpoint.load(Path(kubectl.env["KUBECONFIG"]))
    conn = endpoint.connect()
    conn.request(
        "POST",
        f"/api/v1/namespaces/{ns}/pods/att/exec?command=true&stdout=true",
        headers={
            "Authorization": f"Bearer {endpoint.token}",
            "Connection": "Upgrade",
            "Upgrade": "SPDY/3.1",
        },
    )
    resp = conn.getresponse()
    body = json.loads(resp.read())
    assert (resp.status, body["kind"], body["reason"]) == (400, "Status", "BadRequest")
    assert "SPDY is not" in body["message"]
    ticker = STUBBORN.format(name="ticker").replace(
        "time.sleep(300)", "[print('tick', i, flush=True) or time.sleep(0.3) for i in range(30)]"
    )
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, ticker, "ticker"))
    started(kubectl, ns, "ticker")
    attached = kubectl.run("attach", "-n", ns, "ticker", timeout=60)
    ticks = [line for line in attached.stdout.splitlines() if line.startswith("tick")]
    assert ticks
    assert ticks[-1] == "tick 29"  # followed until the container stopped
    assert "ready" not in attached.stdout  # output from the attach on, not the whole log
    # a container without stdin: true has no stdin to attach: -i only follows its output
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, ticker.replace("ticker", "tock"), "tock"))
    started(kubectl, ns, "tock")
    plain = kubectl.run("attach", "-i", "-n", ns, "tock", stdin="x\n", timeout=60)
    assert "tick 29" in plain.stdout


def test_run_i_feeds_the_container_stdin(kubectl: Kubectl, ns: str) -> None:
    _needs(kubectl, 30, "attach")
    done = kubectl.run(
        *("run", "-i", "--rm", "--restart=Never", "--image=x", "--command", "-n", ns),
        *("t", "--", "sh", "-c", "read x; echo got $x"),
        stdin="hello\n",
        timeout=90,
    )
    assert "got hello" in done.stdout
    gone = kubectl.run("get", "pod", "t", "-n", ns, check=False)  # --rm deleted it
    assert "NotFound" in gone.stderr


STDIN_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  nodeName: trainop-local
  restartPolicy: Never
  containers:
    - name: main
      image: x
      stdin: true
      stdinOnce: {once}
      command: [sh, -c, {script}]
"""


def test_attach_i_with_stdin_once_ends_the_container_stdin(
    kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    _needs(kubectl, 30, "attach")
    once = STDIN_POD.format(name="once", once="true", script='"echo ready; cat; echo eof-seen"')
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, once, "once"))
    started(kubectl, ns, "once")
    attached = kubectl.run("attach", "-i", "-n", ns, "once", stdin="first\n", timeout=60)
    assert "first" in attached.stdout  # cat echoed it, then saw end-of-file and the pod ended
    assert "eof-seen" in attached.stdout
    # without stdinOnce the container's stdin stays open after an attach ends
    script = '"echo ready; read a; echo got-$a; read b; echo got-$b"'
    kept = STDIN_POD.format(name="kept", once="false", script=script)
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, kept, "kept"))
    started(kubectl, ns, "kept")
    # the client's end of stdin ends that attach (as containerd's does), the stdin stays open
    first = kubectl.run("attach", "-i", "-n", ns, "kept", stdin="one\n", timeout=60)
    assert first.returncode == 0
    logs = _eventually(lambda: kubectl.run("logs", "-n", ns, "kept").stdout, "got-one")
    assert "got-one" in logs
    kubectl.run("attach", "-i", "-n", ns, "kept", stdin="two\n", timeout=60)
    logs = _eventually(lambda: kubectl.run("logs", "-n", ns, "kept").stdout, "got-two")
    assert "got-two" in logs
    # tty: true makes the stdio a terminal (its echo of the input lands in the log too)
    script = '"echo ready; read x; test -t 0 && test -t 1 && echo term-$x"'
    term = STDIN_POD.format(name="term", once="true", script=script).replace(
        "stdin: true", "stdin: true\n      tty: true"
    )
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, term, "term"))
    started(kubectl, ns, "term")
    kubectl.run("attach", "-i", "-n", ns, "term", stdin="hi\n", timeout=60)
    logs = _eventually(lambda: kubectl.run("logs", "-n", ns, "term").stdout, "term-hi")
    assert "term-hi" in logs


def test_a_deployment_gets_a_clear_answer(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }
    path = write(tmp_path, json.dumps(deployment), "deploy.json")
    done = kubectl.run("apply", "-n", ns, "-f", path, check=False)
    assert done.returncode == 1
    assert "Deployments are not served in local mode" in done.stderr
    listed = kubectl.run("get", "deployments", "-n", ns, check=False)
    assert listed.returncode == 1
    assert "Deployments are not served in local mode" in listed.stderr


HUNG = one_master_job(
    "hung", """[python, -c, "import time; print('up', flush=True); time.sleep(300)"]"""
)


def test_exec_into_a_running_replica(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    _needs(kubectl, 30, "exec")
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, HUNG))
    polling.wait_for(
        lambda: "up" in kubectl.run("logs", "-n", ns, "hung-master-0", check=False).stdout,
        timeout=60,
        what="the replica started",
        interval=0.2,
    )
    rank = kubectl.out(
        "exec", "-n", ns, "hung-master-0", "--", "sh", "-c", "echo $RANK $WORLD_SIZE"
    )
    assert rank == "0 1\n"  # the replica's own environment, as set by the operator
    kubectl.run("delete", "-n", ns, "pytorchjob", "hung", "--wait=false")


Step = tuple[str, bytes | Callable[[], object]]


def _terminal_session(kubeconfig: Path, path: str, steps: list[Step]) -> str:
    """Exec with a terminal over v5; for each step, wait until the terminal has shown its
    text ("" at once: the terminal buffers what is typed early), then type its keys (or call
    it); return everything the terminal showed."""

    async def talk() -> str:
        endpoint = rawhttps.Endpoint.load(kubeconfig)
        context = tls.client_context(endpoint.ca_pem)
        url = f"https://{endpoint.host}:{endpoint.port}{path}"
        headers = {"Authorization": f"Bearer {endpoint.token}"}
        output = b""
        todo = list(steps)
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(
                url, protocols=("v5.channel.k8s.io",), headers=headers, ssl=context
            ) as ws,
        ):
            deadline = asyncio.get_running_loop().time() + 60
            while True:
                left = deadline - asyncio.get_running_loop().time()
                try:
                    msg = await ws.receive(timeout=max(left, 0.01))
                except TimeoutError:
                    raise AssertionError(f"{todo[:1]} never came: {output!r}") from None
                if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                    break
                if msg.type == aiohttp.WSMsgType.BINARY and msg.data[0] == 1:
                    output += msg.data[1:]
                while todo and todo[0][0].encode() in output:
                    _, action = todo.pop(0)
                    if isinstance(action, bytes):
                        await ws.send_bytes(bytes([0]) + action)
                    else:
                        await asyncio.to_thread(action)
        return output.decode(errors="replace")

    return asyncio.run(asyncio.wait_for(talk(), timeout=90))


def test_control_c_reaches_a_command_on_a_terminal(
    kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, STUBBORN.format(name="ctl"), "ctl"))
    started(kubectl, ns, "ctl")
    query = "command=sh&command=-i&stdin=true&stdout=true&tty=true"
    path = f"/api/v1/namespaces/{ns}/pods/ctl/exec?{query}"
    steps: list[Step] = [
        # The foreground process itself says it runs (the shell's own echo could come before
        # the terminal hands it the foreground); its output differs from the typed line.
        ("", b"python3 -c \"import time; print('sleep' + 'ing', flush=True); time.sleep(600)\"\r"),
        ("sleeping", b"\x03"),
        ("sleeping", b"echo after-$((6*7))\r"),
        ("after-42", b"exit\r"),
    ]
    began = time.monotonic()
    output = _terminal_session(Path(kubectl.env["KUBECONFIG"]), path, steps)
    assert "after-42" in output  # ^C interrupted the sleep; the shell went on
    assert time.monotonic() - began < 30


def test_a_terminal_session_ends_with_its_container(
    kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, STUBBORN.format(name="gone"), "gone"))
    started(kubectl, ns, "gone")
    query = "command=sh&command=-i&stdin=true&stdout=true&tty=true"
    path = f"/api/v1/namespaces/{ns}/pods/gone/exec?{query}"

    def delete() -> object:
        return kubectl.run("delete", "pod", "gone", "-n", ns, "--grace-period=1", "--wait=false")

    steps: list[Step] = [("", b"echo still-''here\r"), ("still-here", delete)]
    began = time.monotonic()
    output = _terminal_session(Path(kubectl.env["KUBECONFIG"]), path, steps)
    assert "still-here" in output
    assert time.monotonic() - began < 20  # the shell went with the container, not after 60 s


def test_create_token_says_local_mode_issues_none(kubectl: Kubectl, ns: str) -> None:
    polling.wait_for(
        lambda: kubectl.run("get", "sa", "default", "-n", ns, check=False).returncode == 0,
        timeout=20,
        what="the default ServiceAccount",
        interval=0.2,
    )
    done = kubectl.run("create", "token", "default", "-n", ns, check=False)
    assert done.returncode == 1
    assert "service account tokens are not issued in local mode" in done.stderr


def test_the_official_clients_exec_stream(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, STUBBORN.format(name="pyc"), "pyc"))
    started(kubectl, ns, "pyc")
    api = k8s.CoreV1Api(k8s_config.new_client_from_config(kubectl.env["KUBECONFIG"]))
    out = stream(
        api.connect_get_namespaced_pod_exec,
        "pyc",
        ns,
        command=["sh", "-c", "echo $GREETING; echo to-stderr >&2"],
        stderr=True,
        stdout=True,
        stdin=False,
        tty=False,
    )
    assert "from-the-pod" in out
    session = stream(
        api.connect_get_namespaced_pod_exec,
        "pyc",
        ns,
        command=["sh", "-c", "exit 5"],
        stderr=True,
        stdout=True,
        _preload_content=False,
    )
    session.run_forever(timeout=30)
    assert session.returncode == 5
