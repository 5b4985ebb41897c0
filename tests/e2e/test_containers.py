"""``trainop run --runtime podman|auto``: PyTorchJobs whose replicas are Podman containers.

The images come from ``make container-images`` (containers/build-images.sh): the training
image has /opt/train/ddp.py and no entrypoint (the manifest's ``command`` runs it), the second
one's ENTRYPOINT runs it (its manifest has no ``command``). The manifests under
tests/e2e/containers/ are a plain PyTorchJob with only the image names changed. After every
case no container or network of the test's sessions is left (``podman ps -a`` / ``network
ls``, by their state directory), also after a SIGKILLed session followed by the next start.
Skipped, with the reason, where podman or the images are missing (``make container-env
container-images``).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from tests import polling

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "tests" / "e2e" / "containers"
IMAGES = ("localhost/trainop-ddp:1", "localhost/trainop-ddp-entry:1")
RANK = re.compile(r"^\[(master-0|worker-[01])\]\s+ddp rank=\d world=3 master=(\S+) .*in_sync=True$")
TRAINOP = (sys.executable, "-m", "trainop.cli.main")
CONF = "[containers]\ndefault_ulimits = []\n"

pytestmark = [pytest.mark.e2e, pytest.mark.containers]


def _podman(tmp: Path, *words: str) -> subprocess.CompletedProcess[str]:
    conf = tmp / "containers.conf"
    conf.write_text(CONF)
    argv = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs", *words]
    env = {**os.environ, "CONTAINERS_CONF": str(conf)}
    return subprocess.run(argv, capture_output=True, text=True, env=env, check=False, timeout=60)


# Where a test's sessions keep their state (the ``trainop.state`` label of everything they
# make): the test's tmp_path (``local up --state-dir``) and a short private TMPDIR, under which
# ``trainop run`` makes its temporary state directory. A test answers only for those: other
# checkouts' tests or a user's own ``trainop local up`` may run containers at the same time.
_OURS: dict[Path, tuple[str, ...]] = {}


def _ours(labels: object, tmp: Path) -> bool:
    state = str((labels or {}).get("trainop.state", "")) if isinstance(labels, dict) else ""
    return any(state == root or state.startswith(root + "/") for root in _OURS.get(tmp, ()))


def _sessions(tmp: Path) -> tuple[set[str], set[str]]:
    label = "label=trainop.session"
    found = _podman(tmp, "ps", "-a", "--filter", label, "--format", "json").stdout
    networks = _podman(tmp, "network", "ls", "--filter", label, "--format", "json").stdout
    return (
        {str(c["Names"]) for c in json.loads(found or "[]") if _ours(c.get("Labels"), tmp)},
        {str(n["name"]) for n in json.loads(networks or "[]") if _ours(n.get("labels"), tmp)},
    )


def _left(tmp: Path) -> tuple[list[str], list[str]]:
    """Containers and networks of this test's trainop sessions that exist now."""
    containers, networks = _sessions(tmp)
    return sorted(containers), sorted(networks)


@pytest.fixture
def podman(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (make container-env)")
    for image in IMAGES:
        if _podman(tmp_path, "image", "exists", image).returncode != 0:
            pytest.skip(f"image {image} is missing (make container-images)")
    yield from private_sessions(tmp_path, monkeypatch, _left)


Left = Callable[[Path], tuple[list[str], list[str]]]  # a runtime's ``_left``


def private_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, left: Left) -> Iterator[Path]:
    """A runtime fixture's body: the test's sessions keep their state under ``tmp_path`` and a
    short private TMPDIR, and leave no container or network (``left``) when it ends."""
    short = tempfile.mkdtemp(prefix="tp-", dir="/tmp")  # sockets' paths stay short
    monkeypatch.setenv("TMPDIR", short)
    _OURS[tmp_path] = (str(tmp_path), short)
    try:
        yield tmp_path
        assert left(tmp_path) == ([], [])
    finally:
        shutil.rmtree(short, ignore_errors=True)


def wait_for_a_container(tmp: Path, left: Left, process: subprocess.Popen[str]) -> None:
    """Until a container of the test's sessions exists (90 s at most; failing at once when
    ``process`` ended without one)."""

    def appeared() -> bool:
        ended = process.poll() is not None
        found = bool(left(tmp)[0])
        assert found or not ended, "the session ended before a container appeared"
        return found

    polling.wait_for(appeared, timeout=90, what="a container of the session", interval=0.2)


def check_the_next_start_reaps_a_sigkilled_session(tmp: Path, runtime: str, left: Left) -> None:
    manifest = str(MANIFESTS / "pytorch-ddp.yaml")
    process = subprocess.Popen(
        [*TRAINOP, "run", "--runtime", runtime, "--timeout", "120", manifest],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        wait_for_a_container(tmp, left, process)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    containers, networks = left(tmp)
    assert containers
    assert networks
    code, output, _ = _run(MANIFESTS / "pytorch-ddp-entrypoint.yaml", "--runtime", runtime)
    assert code == 0, output  # and the fixture finds nothing left of either session


def check_ctrl_c_leaves_no_container(tmp: Path, runtime: str, left: Left) -> None:
    process = subprocess.Popen(
        [*TRAINOP, "run", "--runtime", runtime, str(MANIFESTS / "pytorch-ddp.yaml")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    wait_for_a_container(tmp, left, process)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 130, output
    # the fixture asserts that no container or network is left


def check_local_up_runs_containers(tmp: Path, runtime: str, left: Left) -> None:
    """``local up --runtime <runtime>`` runs a job submitted to it, ``kubectl exec`` reaches a
    pod's container, and ``local down`` leaves nothing (the fixture checks)."""
    state = tmp / "cluster"
    up = subprocess.run(
        [*TRAINOP, "local", "up", "--state-dir", str(state), "--runtime", runtime],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert up.returncode == 0, up.stderr
    env = {**os.environ, "KUBECONFIG": str(state / "kubeconfig")}
    try:
        log = (state / "trainop.log").read_text()  # the daemon's log says which runtime
        assert f"runtime: {runtime} (asked for; a network of their own)" in log
        manifest = str(MANIFESTS / "pytorch-ddp-entrypoint.yaml")
        subprocess.run([*TRAINOP, "submit", "-f", manifest], env=env, check=True, timeout=60)
        wait = ["wait", "pytorchjob", "ddp-entrypoint", "--for", "Succeeded", "--timeout", "120"]
        waited = subprocess.run(
            [*TRAINOP, *wait], env=env, capture_output=True, text=True, timeout=180, check=False
        )
        assert waited.returncode == 0, waited.stdout + waited.stderr
        assert left(tmp)[1], "the session's network exists while the cluster runs"
        if shutil.which("kubectl"):
            _exec_into_a_container(env, tmp, own_address=runtime == "podman")
            _a_missing_image_is_described(env)
            _deletion_is_graceful(env, tmp)
    finally:
        down = subprocess.run(
            [*TRAINOP, "local", "down", "--state-dir", str(state)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert down.returncode == 0, down.stderr


def _run(
    manifest: Path, *flags: str, timeout: float = 240, env: dict[str, str] | None = None
) -> tuple[int, str, float]:
    began = time.monotonic()
    done = subprocess.run(
        [*TRAINOP, "run", *flags, str(manifest)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout,
        check=False,
        env=env,
    )
    elapsed = time.monotonic() - began
    print(f"{manifest.name} {' '.join(flags)}: {elapsed:.1f}s")
    return done.returncode, done.stdout + done.stderr, elapsed


def _ranks(output: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in map(RANK.match, output.splitlines()) if m}


def check_ddp_succeeds(runtime: str) -> str:
    """The DDP job under ``--runtime <runtime>`` succeeds, every rank's ``MASTER_ADDR`` the
    master pod's name (resolved by the session network's DNS); its output."""
    code, output, _ = _run(MANIFESTS / "pytorch-ddp.yaml", "--runtime", runtime)
    assert code == 0, output
    assert output.splitlines()[0] == f"runtime: {runtime} (asked for; a network of their own)"
    master = "ddp-containers-master-0"
    assert _ranks(output) == {"master-0": master, "worker-0": master, "worker-1": master}
    assert output.splitlines()[-1].endswith("Succeeded")
    return output


def test_ddp_from_the_manifests_command_succeeds_in_containers(podman: Path) -> None:
    output = check_ddp_succeeds("podman")
    # the DNS server's start-up line goes to the session's DNS holder, not a replica's log
    # (it only ever shows where no other session's containers keep the server running)
    assert "failed to connect to syslog" not in output


def test_auto_picks_podman_for_an_image_entrypoint_and_it_succeeds(podman: Path) -> None:
    code, output, _ = _run(MANIFESTS / "pytorch-ddp-entrypoint.yaml", "--runtime", "auto")
    assert code == 0, output
    first = output.splitlines()[0]
    assert first == (
        "runtime: podman (auto: no command in master/pytorch, worker/pytorch; "
        "a network of their own)"
    )
    master = "ddp-entrypoint-master-0"
    assert _ranks(output) == {"master-0": master, "worker-0": master, "worker-1": master}


def test_a_missing_image_shows_err_image_pull_and_the_run_ends(podman: Path) -> None:
    check_a_missing_image_ends_the_run(podman, "podman", "Error: ")


def check_a_missing_image_ends_the_run(tmp: Path, runtime: str, error: str) -> None:
    """``ErrImagePull`` with the runtime's message (which begins with ``error``) ends it."""
    manifest = tmp / "missing.yaml"
    text = (MANIFESTS / "pytorch-ddp.yaml").read_text()
    manifest.write_text(text.replace("localhost/trainop-ddp:1", "localhost/trainop-missing:1"))
    code, output, elapsed = _run(manifest, "--runtime", runtime, "--timeout", "90")
    assert code == 1, output
    assert "(ErrImagePull)" in output
    assert f'failed to pull image "localhost/trainop-missing:1": {error}' in output
    assert elapsed < 90


def test_the_next_start_reaps_what_a_sigkilled_session_left(podman: Path) -> None:
    check_the_next_start_reaps_a_sigkilled_session(podman, "podman", _left)


def _one_master_job(name: str, command: list[str], limits: str) -> str:
    """A PyTorchJob of one master (restartPolicy Never) running ``command`` in the Debian
    image with ``resources.limits`` ``limits`` (YAML flow)."""
    return f"""apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {name}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: pytorch
              image: localhost/trainop-debian-py:12
              imagePullPolicy: Never
              command: {json.dumps(command)}
              resources:
                limits: {limits}
"""


OOM_JOB = _one_master_job(
    "oom-containers",
    ["python3", "-c", "x = bytearray(512 * 1024 * 1024)"],
    '{memory: 64Mi, cpu: "1"}',
)


def test_a_memory_limit_is_enforced_and_its_kill_is_oomkilled(podman: Path, tmp_path: Path) -> None:
    check_an_oom_kill_is_oomkilled(tmp_path, "podman")
    assert not (ROOT / "oom").exists()  # conmon's OOM marker stays in the state directory


def check_an_oom_kill_is_oomkilled(tmp: Path, runtime: str) -> None:
    manifest = tmp / "oom.yaml"
    manifest.write_text(OOM_JOB)
    code, output, _ = _run(manifest, "--runtime", runtime, "--timeout", "90")
    assert code == 1, output
    assert "exited with code 137 (OOMKilled)" in output


def test_ctrl_c_of_trainop_run_leaves_no_container(podman: Path) -> None:
    check_ctrl_c_leaves_no_container(podman, "podman", _left)


def test_local_up_runs_containers_and_local_down_leaves_none(podman: Path) -> None:
    check_local_up_runs_containers(podman, "podman", _left)


def test_a_tfjob_reaches_every_task_by_the_hosts_tf_config_names(podman: Path) -> None:
    code, output, _ = _run(MANIFESTS / "tfjob-tfconfig.yaml", "--runtime", "podman")
    assert code == 0, output
    for task in ("chief-0", "worker-0", "worker-1"):
        assert re.search(rf"^\[{task}\]\s+tfconfig {task} reached all 3 tasks OK$", output, re.M)
    host = "tfconfig-containers-worker-1.default.svc:2222"  # upstream's name and port
    assert re.search(rf"^\[chief-0\]\s+tfconfig chief-0 reached {host}: worker-1$", output, re.M)


SIDECAR_CLIENT = """import socket, time, urllib.request
for _ in range(300):
    try:
        urllib.request.urlopen("http://127.0.0.1:8000/").read()
        break
    except OSError:
        time.sleep(0.1)
else:
    raise SystemExit("the sidecar never answered on localhost")
print("reached the sidecar on localhost as", socket.gethostname())
"""
SIDECAR_SERVER = """import http.server as h
h.HTTPServer(("127.0.0.1", 8000), h.SimpleHTTPRequestHandler).handle_request()
"""


def _sidecar_job() -> str:
    """One master pod of two containers: ``pytorch`` asks ``sidecar`` on 127.0.0.1:8000."""
    containers = [
        {
            "name": name,
            "image": "localhost/trainop-debian-py:12",
            "imagePullPolicy": "Never",
            "command": ["python3", "-c", code],
        }
        for name, code in (("pytorch", SIDECAR_CLIENT), ("sidecar", SIDECAR_SERVER))
    ]
    master = {
        "replicas": 1,
        "restartPolicy": "Never",
        "template": {"spec": {"containers": containers}},
    }
    spec = {"pytorchReplicaSpecs": {"Master": master}}
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "sidecar-pair"},
    }
    return yaml.safe_dump({**job, "spec": spec})


def test_the_containers_of_a_pod_share_localhost_and_hostname(podman: Path) -> None:
    """A sidecar listening on 127.0.0.1 is reached by the pod's other container, as in a
    Kubernetes pod (one network namespace: the pod's holder's); both see the pod's name."""
    manifest = podman / "sidecar.yaml"
    manifest.write_text(_sidecar_job())
    code, output, _ = _run(manifest, "--runtime", "podman", "--timeout", "90")
    assert code == 0, output
    shown = r"^\[master-0\]\s+reached the sidecar on localhost as sidecar-pair-master-0$"
    assert re.search(shown, output, re.M), output
    assert output.splitlines()[-1].endswith("Succeeded")


def test_where_no_network_can_be_made_containers_share_the_hosts_with_loopback_ports(
    podman: Path, tmp_path: Path
) -> None:
    real = shutil.which("podman")
    wrapper = tmp_path / "bin" / "podman"
    wrapper.parent.mkdir()
    wrapper.write_text(
        f'#!/bin/sh\ncase "$*" in *"network create"*) echo "Error: no bridge" >&2; exit 125 ;;\n'
        f'esac\nexec {real} "$@"\n'
    )
    wrapper.chmod(0o700)
    env = {**os.environ, "PATH": f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [*TRAINOP, "run", "--runtime", "podman", str(MANIFESTS / "pytorch-ddp.yaml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=240,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert output.splitlines()[0] == "runtime: podman (asked for; host network)"
    loopback = "127.0.0.1"  # the process kubelet's addressing: a loopback port per replica
    assert _ranks(output) == {"master-0": loopback, "worker-0": loopback, "worker-1": loopback}


SLEEPER = """apiVersion: v1
kind: Pod
metadata: {name: sleeper}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  volumes: [{name: cfg, configMap: {name: cfg}}]
  containers:
    - name: main
      image: localhost/trainop-debian-py:12
      imagePullPolicy: Never
      command: ["python3", "-m", "http.server", "8000"]  # no SIGTERM handler, as PID 1
      workingDir: /tmp
      env:
        - {name: FOO, value: bar}
        - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
      volumeMounts:
        - {name: cfg, mountPath: /etc/cfg, readOnly: true}
        - {name: cfg, mountPath: "/etc/a,source=/", readOnly: true}  # one path, not 2 options
"""


def _exec_into_a_container(env: dict[str, str], tmp_path: Path, *, own_address: bool) -> None:
    """kubectl exec reaches the container (podman exec): its env, workingDir, hostname and a
    read-only configMap mount at its mountPath (one with a comma in it too)."""

    def kubectl(*words: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            ["kubectl", *words],
            input=stdin,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    kubectl("create", "configmap", "cfg", "--from-literal=key=value")
    kubectl("apply", "-f", "-", stdin=SLEEPER)
    kubectl("wait", "--for=condition=Ready", "pod/sleeper", "--timeout=90s")
    script = "echo $FOO; pwd; hostname; cat /etc/cfg/key; echo; touch /etc/cfg/x || echo ro"
    script += "; cat '/etc/a,source=/key'; echo; echo $POD_IP"
    out = kubectl("exec", "sleeper", "--", "sh", "-c", script)
    pod_ip = kubectl("get", "pod", "sleeper", "-o", "jsonpath={.status.podIP}")
    assert out.split() == ["bar", "/tmp", "sleeper", "value", "ro", "value", pod_ip]
    if own_address:  # the pod's address on the session network (its holder's), as kubelet's
        assert ipaddress.ip_address(pod_ip).is_private, pod_ip
        assert pod_ip != "127.0.0.1"
        _port_forward_reaches_the_pod(env)
    # kubelet's image event, then Created and Started (the image is local: never pulled)
    shown = json.loads(
        kubectl("get", "events", "--field-selector=involvedObject.name=sleeper", "-o", "json")
    )
    reasons = {event["reason"]: event["message"] for event in shown["items"]}
    image = "localhost/trainop-debian-py:12"
    assert reasons["Pulled"] == f'Container image "{image}" already present on machine'
    assert {"Created", "Started"} <= reasons.keys()


def _port_forward_reaches_the_pod(env: dict[str, str]) -> None:
    """``kubectl port-forward`` reaches the container's port at the pod's address (its
    http.server lists its working directory, /tmp)."""
    forward = subprocess.Popen(
        ["kubectl", "port-forward", "pod/sleeper", ":8000"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert forward.stdout is not None
        first = forward.stdout.readline()  # "Forwarding from 127.0.0.1:PORT -> 8000"
        found = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) -> 8000", first)
        assert found, first
        url = f"http://127.0.0.1:{found.group(1)}/"

        def answered() -> str | polling.NotYet:
            try:
                with urllib.request.urlopen(url, timeout=5) as reply:
                    assert reply.status == 200
                    return str(reply.read().decode())
            except OSError as error:
                return polling.NotYet(error)

        listing = polling.wait_for(answered, timeout=30, what="port-forward answered", interval=0.3)
        assert "Directory listing for /" in listing
    finally:
        forward.terminate()
        forward.wait(timeout=30)


GRACEFUL = """apiVersion: v1
kind: Pod
metadata: {{name: graceful}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 60
  volumes: [{{name: marks, hostPath: {{path: {marks}, type: DirectoryOrCreate}}}}]
  containers:
    - name: main
      image: localhost/trainop-debian-py:12
      imagePullPolicy: Never
      volumeMounts: [{{name: marks, mountPath: /marks}}]
      command:
        - python3
        - -c
        - |
          import pathlib, signal, sys, time
          def leave(signum, frame):
              pathlib.Path("/marks/term").write_text(signal.Signals(signum).name)
              sys.exit(0)
          signal.signal(signal.SIGTERM, leave)
          print("handler installed", flush=True)
          while True:
              time.sleep(1)
"""


def _kubectl_output(env: dict[str, str], *words: str) -> str:
    done = subprocess.run(
        ["kubectl", *words], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _deletion_is_graceful(env: dict[str, str], tmp: Path) -> None:
    """``kubectl delete pod`` as on a cluster: the container gets SIGTERM and may leave at
    once (long before its 60 s grace period); one that ignores SIGTERM (a PID 1 with no
    handler for it) is killed when its grace period ends, not before."""

    def kubectl(*words: str, stdin: str | None = None) -> float:
        began = time.monotonic()
        done = subprocess.run(
            ["kubectl", *words], input=stdin, env=env, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return time.monotonic() - began

    marks = tmp / "marks"
    kubectl("apply", "-f", "-", stdin=GRACEFUL.format(marks=marks))
    kubectl("wait", "--for=condition=Ready", "pod/graceful", "--timeout=90s")
    polling.wait_for(  # SIGTERM before the handler is installed would be lost
        lambda: "handler installed" in _kubectl_output(env, "logs", "graceful"),
        timeout=60,
        what="the handler installed",
        interval=0.2,
    )
    took = kubectl("delete", "pod", "graceful", "--wait=true", "--timeout=90s")
    assert (marks / "term").read_text() == "SIGTERM"
    assert took < 45, took  # it left on SIGTERM: no SIGKILL at 60 s
    took = kubectl("delete", "pod", "sleeper", "--grace-period=3", "--wait=true", "--timeout=90s")
    assert 2.9 <= took < 45, took  # SIGKILL once the 3 s are over


def _a_missing_image_is_described(env: dict[str, str]) -> None:
    """A job whose image cannot be pulled: ``kubectl describe pod`` shows the container
    waiting with the runtime's message and kubelet's events; ``trainop describe`` shows the
    engine's warning with that message."""
    missing = "localhost/trainop-missing:1"
    text = (MANIFESTS / "pytorch-ddp.yaml").read_text().replace("localhost/trainop-ddp:1", missing)
    applied = subprocess.run(
        ["kubectl", "apply", "-f", "-"], input=text, env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert applied.returncode == 0, applied.stderr
    pulled = f'failed to pull image "{missing}": '

    def describe(*words: str) -> str:
        done = subprocess.run(
            list(words), env=env, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def described() -> tuple[str, str] | polling.NotYet:
        pod = describe("kubectl", "describe", "pod", "ddp-containers-master-0")
        job = describe(*TRAINOP, "describe", "pytorchjob", "ddp-containers")
        return (pod, job) if pulled in pod and "ErrImagePull" in job else polling.NotYet((pod, job))

    pod, job = polling.wait_for(
        described, timeout=60, what="the failed pull described", interval=0.5
    )
    assert re.search(r"Reason:\s+(ErrImagePull|ImagePullBackOff)", pod), pod
    assert pulled in pod, pod
    assert f'Pulling image "{missing}"' in pod, pod  # kubelet's events, in the Events table
    assert f'Failed to pull image "{missing}": {pulled}' in pod, pod
    assert "ErrImagePull" in job, job
    assert pulled in job, job


MPI_IMAGE = "localhost/trainop-mpi:1"
MPI_PROOF = re.compile(
    r"^\[launcher[\w-]*\]\s+PROOF mpi size=2 allreduce sum=3 expected=3 distinct_processes=True "
    r"ranks_per_node=1 hosts=(\S+) OK$",
    re.MULTILINE,
)


@pytest.mark.parametrize(
    ("manifest", "job", "agent"),
    [
        ("mpi-allreduce.yaml", "mpi-allreduce", "/run/trainop/execclient.py"),
        ("mpi-v2beta1-allreduce.yaml", "mpi-v2-allreduce", None),
    ],
)
def test_mpi_launcher_starts_its_ranks_in_the_worker_containers(
    podman: Path, manifest: str, job: str, agent: str | None
) -> None:
    """examples/mpi's all-reduce (v1: kubexec.sh; v2beta1: ssh) with only the image changed:
    the launcher container's rsh agent reaches the kubelet's exec through the mounted socket,
    which runs ``orted`` in each worker container (``podman exec``), so every rank's hostname
    is a worker pod's name."""
    if _podman(podman, "image", "exists", MPI_IMAGE).returncode != 0:
        pytest.skip(f"image {MPI_IMAGE} is missing (make container-images)")
    example = (ROOT / "examples" / "mpi" / manifest.replace("mpi-", "", 1)).read_text()
    assert (MANIFESTS / manifest).read_text() == example.replace("python:3.11", MPI_IMAGE)
    code, output, _ = _run(MANIFESTS / manifest, "--runtime", "podman")
    assert code == 0, output
    assert output.splitlines()[0] == "runtime: podman (asked for; a network of their own)"
    assert MPI_PROOF.findall(output) == [f"{job}-worker-0,{job}-worker-1"], output
    if agent is not None:
        # kubexec.sh's ``set -x`` shows the agent it runs per worker; the two workers' traces
        # share the launcher's stderr and interleave word by word, even inside a word (seen:
        # ``execclient.pypython3``), so the check counts the agent's path in the text: once per
        # worker at least (the proof line above shows a rank on each worker)
        assert output.count(agent) >= 2, output
    assert output.splitlines()[-1].endswith("Succeeded")


GPU_JOB = _one_master_job(
    "gpu-containers",
    ["sh", "-c", "echo gpu=$TRAINOP_FAKE_GPU; if test -c /dev/nvidia-fake; then echo node; fi"],
    "{nvidia.com/gpu: 1}",
)
# A CDI spec as the NVIDIA Container Toolkit writes one (kind nvidia.com/gpu, devices named by
# index), whose edits are harmless: a variable and /dev/null as a device node.
FAKE_CDI = """cdiVersion: "0.5.0"
kind: nvidia.com/gpu
devices:
  - name: "0"
    containerEdits:
      env: ["TRAINOP_FAKE_GPU=0"]
      deviceNodes: [{path: /dev/nvidia-fake, hostPath: /dev/null}]
"""
CDI_RUN_DIR = Path("/var/run/cdi")


def _with_a_fake_gpu(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The job's manifest, and an environment whose ``nvidia-smi`` lists one GPU (index 0)."""
    manifest = tmp_path / "gpu.yaml"
    manifest.write_text(GPU_JOB)
    smi = tmp_path / "smi" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text("#!/bin/sh\necho 'GPU 0: Fake GPU (UUID: GPU-00000000-0000-0000-0000-0)'\n")
    smi.chmod(0o700)
    return manifest, {**os.environ, "PATH": f"{smi.parent}{os.pathsep}{os.environ['PATH']}"}


def _skip_where_the_machine_has_a_cdi_spec() -> None:
    from trainop.cluster.kubelet.runtimes import cdi

    if "0" in cdi.cdi_devices("nvidia.com/gpu"):
        pytest.skip("this machine has a CDI spec for nvidia.com/gpu=0 of its own")


@pytest.fixture
def cdi_spec() -> Iterator[Path]:
    """A CDI spec for ``nvidia.com/gpu=0`` under /var/run/cdi (where podman 4.3 reads them),
    under a unique name, removed afterwards (with the directory, when the test made it)."""
    _skip_where_the_machine_has_a_cdi_spec()
    made = not CDI_RUN_DIR.exists()
    path = CDI_RUN_DIR / f"trainop-test-{os.getpid()}-{time.monotonic_ns()}.yaml"
    try:
        CDI_RUN_DIR.mkdir(exist_ok=True)
        path.write_text(FAKE_CDI)
    except OSError as exc:
        pytest.skip(f"{CDI_RUN_DIR} is not writable here ({exc})")
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)
        if made:
            with contextlib.suppress(OSError):
                CDI_RUN_DIR.rmdir()


def test_a_held_gpu_reaches_the_container_as_a_cdi_device(
    podman: Path, tmp_path: Path, cdi_spec: Path
) -> None:
    """A fake ``nvidia-smi`` lists GPU 0; the container asking for one gets
    ``--device nvidia.com/gpu=0`` and podman applies the spec's edits."""
    manifest, env = _with_a_fake_gpu(tmp_path)
    code, output, _ = _run(manifest, "--runtime", "podman", "--timeout", "90", env=env)
    assert code == 0, output
    assert re.search(r"^\[master-0\]\s+gpu=0$", output, re.M), output
    assert re.search(r"^\[master-0\]\s+node$", output, re.M), output


def test_a_held_gpu_without_a_cdi_spec_fails_naming_the_fix(podman: Path, tmp_path: Path) -> None:
    _skip_where_the_machine_has_a_cdi_spec()
    manifest, env = _with_a_fake_gpu(tmp_path)
    code, output, elapsed = _run(manifest, "--runtime", "podman", "--timeout", "90", env=env)
    assert code == 1, output
    assert "unresolvable CDI devices nvidia.com/gpu=0" in output
    assert "nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml" in output
    assert elapsed < 90


LIMITS_JOB = _one_master_job(
    "limits-containers",
    [
        "sh",
        "-c",
        "echo memory=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null"
        " || cat /sys/fs/cgroup/memory.max);"
        " echo cpu=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null"
        " || cut -d' ' -f1 /sys/fs/cgroup/cpu.max)",
    ],
    "{memory: 96Mi, cpu: 500m}",
)


def test_a_pods_limits_are_its_containers_cgroup_limits(podman: Path, tmp_path: Path) -> None:
    """Where podman can use the memory and cpu controllers (here: root, cgroup v1), the
    container runs under the manifest's limits: 96Mi and half a CPU (50 ms per 100 ms)."""
    check_limits_apply(tmp_path, "podman")


def check_limits_apply(tmp: Path, runtime: str) -> None:
    """``LIMITS_JOB`` succeeds and its container sees 96Mi and a 50 ms quota per 100 ms."""
    manifest = tmp / "limits.yaml"
    manifest.write_text(LIMITS_JOB)
    code, output, _ = _run(manifest, "--runtime", runtime, "--timeout", "90")
    assert code == 0, output
    assert re.search(rf"^\[master-0\]\s+memory={96 * 1024 * 1024}$", output, re.M), output
    assert re.search(r"^\[master-0\]\s+cpu=50000$", output, re.M), output


def test_a_gpu_declared_with_gpus_that_the_machine_lacks_runs_on_cpu(
    podman: Path, tmp_path: Path
) -> None:
    """``local up --gpus 1`` on a machine without GPUs: the pod holds the declared slot, which
    has no device, so the container gets none (no CDI spec needed) and runs, as a host
    process does."""
    if shutil.which("nvidia-smi"):
        pytest.skip("this machine has nvidia-smi: its GPUs are real")
    manifest = tmp_path / "gpu.yaml"
    manifest.write_text(GPU_JOB)
    state = tmp_path / "cluster"

    def trainop(*words: str, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            [*TRAINOP, *words], env=env, capture_output=True, text=True, timeout=150, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    trainop("local", "up", "--state-dir", str(state), "--runtime", "podman", "--gpus", "1")
    env = {**os.environ, "KUBECONFIG": str(state / "kubeconfig")}
    try:
        trainop("submit", "-f", str(manifest), env=env)
        job = ("pytorchjob", "gpu-containers")
        trainop("wait", *job, "--for", "Succeeded", "--timeout", "120", env=env)
        logs = trainop("logs", *job, env=env)
        assert re.search(r"^(\[master-0\]\s+)?gpu=$", logs, re.M), logs
    finally:
        trainop("local", "down", "--state-dir", str(state))
