"""The operator image runs as the shipped Deployment runs it (issue 25, docs/design/020).

``make operator-image`` builds ``localhost/trainop:<version>`` from the Dockerfile
(containers/build-operator-image.sh). This test starts ``trainop local up --no-operator`` (no
embedded operator: nothing else reconciles), then runs the image with Podman as
manifests/base/deployment.yaml describes its container, read from that file: its command and
args, its environment (``MY_POD_NAMESPACE`` = kubeflow, ``MY_POD_NAME``), the image's numeric
user, a read-only root filesystem with only the Deployment's volumes mounted (the webhook
certificate Secret read-only, empty as on a fresh install; ``/tmp`` an emptyDir), all
capabilities dropped and no privilege escalation. What a cluster would give it otherwise:
the session's kubeconfig, mounted read-only and named by ``KUBECONFIG``, and the host network,
so ``127.0.0.1:<port>`` reaches the embedded API server (the operator's ports 8080, 8081 and
9443 are then the host's). Then: ``/readyz`` answers 200; the webhook certificate is stored in
its Secret and its CA injected into the webhook configuration, and the webhook answers over
TLS for ``training-operator.kubeflow.svc``; a PyTorchJob applied with kubectl Succeeds, its
pod got the cluster topology (``MASTER_ADDR`` = the master pod's name, port 23456, which the
embedded operator of a process session would not give), and the container's own metrics count
the job; SIGTERM stops the container with exit code 0 and the Lease released. Markers ``e2e``
and ``containers``; skipped with the reason where podman or the image is missing. A second test
runs the Trainer overlay's container (every kind and TrainJob): ready against ``local up``, which
serves the JobSet CRD, its CA in Trainer's two webhook configurations, the defaulter answering.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

import trainop
from tests import polling
from tests.unit.deploy import kustomize

ROOT = Path(__file__).resolve().parents[2]
DEPLOYMENT = ROOT / "manifests" / "base" / "deployment.yaml"
STANDALONE = ROOT / "manifests" / "overlays" / "standalone"
WEBHOOKS = ROOT / "manifests" / "base" / "validating-webhook-configuration.yaml"
TRAINER_OVERLAY = ROOT / "manifests" / "overlays" / "trainer"
TRAINER_WEBHOOKS = ROOT / "manifests" / "trainer" / "webhooks"
IMAGE = f"localhost/trainop:{trainop.__version__}"
NAMESPACE = "kubeflow"  # the standalone overlay's: MY_POD_NAMESPACE
TRAINOP = (sys.executable, "-m", "trainop.cli.main")
CONF = "[containers]\ndefault_ulimits = []\n"
JOB = "operator-image"
JOB_MANIFEST = f"""
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: {JOB}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: pytorch
              image: python:3.11
              command: [python3, -c, "import os; print('PROOF', *(os.environ[n] for n in
                ('MASTER_ADDR', 'MASTER_PORT', 'WORLD_SIZE', 'RANK')))"]
"""

pytestmark = [pytest.mark.e2e, pytest.mark.containers]


@dataclass(frozen=True)
class Session:
    """A ``local up --no-operator`` cluster and the podman and kubectl that reach it."""

    tmp: Path
    state: Path
    kubectl: tuple[str, ...]

    def podman(self, *words: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        conf = self.tmp / "containers.conf"
        conf.write_text(CONF)
        argv = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs", *words]
        env = {**os.environ, "CONTAINERS_CONF": str(conf)}
        return subprocess.run(
            argv, capture_output=True, text=True, env=env, check=False, timeout=timeout
        )

    def run_kubectl(self, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run(
            [*self.kubectl, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stdout}{done.stderr}"
        return done.stdout

    def get(self, *args: str) -> dict[str, Any]:
        found: dict[str, Any] = json.loads(self.run_kubectl("get", *args, "-o", "json"))
        return found


def _kubectl() -> str:
    found = shutil.which("kubectl") or shutil.which(
        "kubectl", path=str(Path(sys.executable).parent)
    )
    if found is None and os.environ.get("TRAINOP_E2E_REQUIRE") == "1":
        pytest.fail("kubectl is not installed (make kubectl-env)")
    if found is None:
        pytest.skip("kubectl is not installed (make kubectl-env)")
    return found


def _busy_ports(container: dict[str, Any]) -> list[int]:
    """The Deployment's ports (metrics, probes, webhook) that something on this host holds."""
    ports = [p["containerPort"] for p in container["ports"]]
    ports.append(container["readinessProbe"]["httpGet"]["port"])
    busy = []
    for port in sorted(set(ports)):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                busy.append(port)
    return busy


def _deployment_container() -> dict[str, Any]:
    deployment = yaml.safe_load(DEPLOYMENT.read_text())
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert isinstance(container, dict)
    return container


def _deployment_flags() -> dict[str, str]:
    """The Deployment's ``--name=value`` args by name (a bare flag: ``"true"``)."""
    flags = {}
    for arg in _deployment_container()["args"]:
        name, _, value = arg.removeprefix("--").partition("=")
        flags[name] = value or "true"
    return flags


def _local(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [*TRAINOP, "local", *args, "--state-dir", str(state)]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, cwd=ROOT, check=False
    )


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (make container-env)")
    kubectl = _kubectl()
    short = Path(tempfile.mkdtemp(prefix="tp-", dir="/tmp"))  # short socket paths
    probe = Session(tmp=short, state=short / "local", kubectl=())
    if probe.podman("image", "exists", IMAGE).returncode != 0:
        shutil.rmtree(short, ignore_errors=True)
        pytest.skip(f"image {IMAGE} is missing (make operator-image)")
    busy = _busy_ports(_deployment_container())
    if busy:
        shutil.rmtree(short, ignore_errors=True)
        pytest.skip(f"the Deployment's ports {busy} are taken on this host (host network)")
    state = short / "local"
    started = _local(state, "up", "--no-operator")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert "no embedded operator" in started.stdout
        cache = ("--cache-dir", str(tmp_path / "kubectl-cache"))
        yield Session(
            tmp=short,
            state=state,
            kubectl=(kubectl, "--kubeconfig", str(state / "kubeconfig"), *cache),
        )
    finally:
        stopped = _local(state, "down")
        shutil.rmtree(short, ignore_errors=True)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def _podman_run_args(session: Session, container: dict[str, Any], name: str) -> list[str]:
    """``podman run`` for the Deployment's container (module docstring), detached."""
    context = container.get("securityContext") or {}
    args = ["run", "-d", "--name", name, "--network", "host", "--user", "65532:65532"]
    if context.get("readOnlyRootFilesystem"):  # kube mounts no tmpfs of its own, nor does this
        args += ["--read-only", "--read-only-tmpfs=false"]
    for capability in (context.get("capabilities") or {}).get("drop", []):
        args += ["--cap-drop", capability]
    if context.get("allowPrivilegeEscalation") is False:
        args += ["--security-opt", "no-new-privileges"]
    fields = {"metadata.namespace": NAMESPACE, "metadata.name": f"{name}-0"}
    for variable in container.get("env", []):
        field = variable["valueFrom"]["fieldRef"]["fieldPath"]
        args += ["-e", f"{variable['name']}={fields[field]}"]
    args += _volume_args(session, container)
    kubeconfig = session.tmp / "operator-kubeconfig"  # the user 65532 reads it: 0644 in a 0700 dir
    shutil.copyfile(session.state / "kubeconfig", kubeconfig)
    kubeconfig.chmod(0o644)
    args += ["-v", f"{kubeconfig}:/var/run/trainop/kubeconfig:ro"]
    args += ["-e", "KUBECONFIG=/var/run/trainop/kubeconfig"]
    args += ["--entrypoint", json.dumps(container["command"]), IMAGE, *container["args"]]
    return args


def _volume_args(session: Session, container: dict[str, Any]) -> list[str]:
    """The Deployment's volumes: a Secret as an empty directory (a fresh install's Secret has
    no data), an emptyDir as a tmpfs (0777, as kubelet makes it); any other kind is a change
    this test must learn."""
    deployment = yaml.safe_load(DEPLOYMENT.read_text())
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    args = []
    for mount in container.get("volumeMounts", []):
        volume, target = volumes[mount["name"]], mount["mountPath"]
        if "secret" in volume:
            source = session.tmp / f"volume-{mount['name']}"
            source.mkdir(mode=0o755)
            mode = "ro" if mount.get("readOnly") else "rw"
            args += ["-v", f"{source}:{target}:{mode}"]
        elif "emptyDir" in volume:
            args += ["--mount", f"type=tmpfs,destination={target},tmpfs-mode=777"]
        else:
            raise AssertionError(f"volume {mount['name']}: a kind this test does not mount")
    return args


@contextlib.contextmanager
def _operator(session: Session, container: dict[str, Any]) -> Iterator[str]:
    """The operator's container, running; removed at the end (its log printed first)."""
    name = f"trainop-operator-test-{uuid.uuid4().hex[:8]}"
    started = session.podman(*_podman_run_args(session, container, name))
    assert started.returncode == 0, started.stderr
    try:
        yield name
    finally:
        logs = session.podman("logs", name)
        log = logs.stdout + logs.stderr
        print("\n".join(["operator log (last 40 lines):", *log.splitlines()[-40:]]))
        session.podman("rm", "-f", "-t", "10", name)


def _http(url: str) -> tuple[int, str] | polling.NotYet:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return polling.NotYet((exc.code, exc.read().decode()))
    except OSError as exc:
        return polling.NotYet(str(exc))


def _ready(session: Session, name: str, port: int) -> tuple[int, str] | polling.NotYet:
    running = session.podman("inspect", "--format", "{{.State.Running}}", name).stdout.strip()
    assert running == "true", f"the operator container stopped: {session.podman('logs', name)}"
    return _http(f"http://127.0.0.1:{port}/readyz")


def _succeeded(session: Session) -> bool | polling.NotYet:
    conditions = session.get("pytorchjob", JOB).get("status", {}).get("conditions", [])
    state = {c["type"]: c["status"] for c in conditions}
    assert state.get("Failed") != "True", conditions
    return state.get("Succeeded") == "True" or polling.NotYet(conditions)


def _webhook_review(
    ca: bytes,
    port: int,
    service: str,
    job: dict[str, Any],
    path: str = "/validate-kubeflow-org-v1-pytorchjob",
) -> dict[str, Any]:
    """POST an AdmissionReview for ``job`` to the webhook's ``path`` over TLS, trusting only
    ``ca`` and checking the certificate names ``service`` (as the API server does)."""
    review = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": "u-1", "operation": "CREATE", "object": job},
    }
    body = json.dumps(review).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {service}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    context = ssl.create_default_context(cadata=ca.decode())
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=service) as tls,
    ):
        tls.sendall(head.encode() + body)
        answer = b""
        while chunk := tls.recv(65536):
            answer += chunk
    status, _, payload = answer.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 200"), answer
    response: dict[str, Any] = json.loads(payload)["response"]
    return response


def _check_webhook(session: Session, flags: dict[str, str]) -> None:
    """The certificate is in its Secret, its CA in every webhook, and the webhook judges."""
    secret = session.get("secret", "-n", NAMESPACE, flags["webhook-secret-name"])
    ca = base64.b64decode(secret["data"]["ca.crt"])
    name = yaml.safe_load(WEBHOOKS.read_text())["metadata"]["name"]
    configuration = session.get("validatingwebhookconfiguration", name)
    bundles = {w["clientConfig"].get("caBundle") for w in configuration["webhooks"]}
    assert bundles == {secret["data"]["ca.crt"]}
    service = f"{flags['webhook-service-name']}.{NAMESPACE}.svc"
    port = int(flags["webhook-server-port"])
    job = yaml.safe_load(JOB_MANIFEST)
    allowed = _webhook_review(ca, port, service, job)
    assert allowed == {"uid": "u-1", "allowed": True, "status": {"code": 200}}
    job["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    denied = _webhook_review(ca, port, service, job)
    assert denied["allowed"] is False, denied


def test_the_operator_image_runs_as_the_deployment_does_and_reconciles_a_job(
    session: Session,
) -> None:
    container, flags = _deployment_container(), _deployment_flags()
    image_user = session.podman("image", "inspect", "--format", "{{.Config.User}}", IMAGE)
    assert image_user.stdout.strip() == "65532:65532"  # numeric: runAsNonRoot can verify it
    session.run_kubectl("apply", "-f", str(STANDALONE / "namespace.yaml"))
    secret = str(STANDALONE / "webhook-cert-secret.yaml")
    session.run_kubectl("apply", "-n", NAMESPACE, "-f", secret, "-f", str(WEBHOOKS))
    with _operator(session, container) as name:
        port = container["readinessProbe"]["httpGet"]["port"]
        ready = polling.wait_for(
            lambda: _ready(session, name, port),
            timeout=90,
            what="the operator container's /readyz",
            interval=0.2,
        )
        assert ready[0] == 200, ready
        _check_webhook(session, flags)
        _check_a_job_succeeds(session, container)
        _check_sigterm_stops_it_cleanly(session, name, flags)


def _check_a_job_succeeds(session: Session, container: dict[str, Any]) -> None:
    """Applied with kubectl, reconciled by the container (its topology, its metrics)."""
    session.run_kubectl("apply", "-f", "-", stdin=JOB_MANIFEST)
    polling.wait_for(
        lambda: _succeeded(session), timeout=120, what=f"PyTorchJob {JOB} Succeeded", interval=0.5
    )
    log = session.run_kubectl("logs", f"{JOB}-master-0")
    # The cluster topology (the master pod's name, upstream's port): the embedded operator of
    # a process session would have given 127.0.0.1 and a loopback port of its pool.
    assert f"PROOF {JOB}-master-0 23456 1 0" in log
    [port] = [p["containerPort"] for p in container["ports"] if p["name"] == "metrics"]
    metrics = _http(f"http://127.0.0.1:{port}/metrics")
    assert isinstance(metrics, tuple), metrics
    labels = 'framework="pytorch",job_namespace="default"'
    assert f"training_operator_jobs_successful_total{{{labels}}} 1.0" in metrics[1]


def _check_sigterm_stops_it_cleanly(session: Session, name: str, flags: dict[str, str]) -> None:
    """Within the Deployment's grace period, exit code 0, the Lease given up."""
    deployment = yaml.safe_load(DEPLOYMENT.read_text())
    grace = int(deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"])
    stopped = session.podman("stop", "-t", str(grace), name, timeout=grace + 30)
    assert stopped.returncode == 0, stopped.stderr
    code = session.podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
    assert code == "0", "SIGTERM stops the operator cleanly"
    lease = session.get("lease", "-n", NAMESPACE, flags["leader-election-id"])
    assert not lease["spec"].get("holderIdentity"), lease["spec"]


def _trainer_container() -> dict[str, Any]:
    """The operator's container as the Trainer overlay renders it (every kind, TrainJob too)."""
    [deployment] = [o for o in kustomize.build(TRAINER_OVERLAY) if o["kind"] == "Deployment"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert "--enable-scheme=trainjob" in container["args"]
    assert isinstance(container, dict)
    return container


def test_the_image_with_trainjob_enabled_becomes_ready_and_serves_trainers_webhooks(
    session: Session,
) -> None:
    """The Trainer overlay's container against ``local up`` (which serves the JobSet CRD):
    ``/readyz`` answers 200, the CA is injected into Trainer's two webhook configurations, and
    the TrainJob defaulter answers over TLS on its spec 6.1 path."""
    container, flags = _trainer_container(), _deployment_flags()
    session.run_kubectl("apply", "-f", str(STANDALONE / "namespace.yaml"))
    secret = str(STANDALONE / "webhook-cert-secret.yaml")
    session.run_kubectl("apply", "-n", NAMESPACE, "-f", secret, "-f", str(WEBHOOKS))
    session.run_kubectl("apply", "-k", str(TRAINER_WEBHOOKS))
    with _operator(session, container) as name:
        port = container["readinessProbe"]["httpGet"]["port"]
        ready = polling.wait_for(
            lambda: _ready(session, name, port),
            timeout=90,
            what="the operator container's /readyz (TrainJob enabled)",
            interval=0.2,
        )
        assert ready[0] == 200, ready
        stored = session.get("secret", "-n", NAMESPACE, flags["webhook-secret-name"])
        for kind, configuration in (
            ("mutatingwebhookconfiguration", "defaulter.trainer.kubeflow.org"),
            ("validatingwebhookconfiguration", "validator.trainer.kubeflow.org"),
        ):
            webhooks = session.get(kind, configuration)["webhooks"]
            bundles = {w["clientConfig"].get("caBundle") for w in webhooks}
            assert bundles == {stored["data"]["ca.crt"]}, configuration
        trainjob = {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "TrainJob",
            "metadata": {"name": "tj", "namespace": "default"},
            "spec": {"runtimeRef": {"name": "torch-distributed"},
                     "runtimePatches": [{"manager": "example.com/m"}]},
        }  # fmt: skip
        service = f"{flags['webhook-service-name']}.{NAMESPACE}.svc"
        defaulted = _webhook_review(
            base64.b64decode(stored["data"]["ca.crt"]),
            int(flags["webhook-server-port"]),
            service,
            trainjob,
            path="/mutate-trainer-kubeflow-org-v1alpha1-trainjob",
        )
        assert defaulted["allowed"] is True, defaulted
        assert defaulted["patchType"] == "JSONPatch"
        [patch] = json.loads(base64.b64decode(defaulted["patch"]))
        [stamped] = patch["value"]
        assert stamped["manager"] == "example.com/m"
        assert stamped["time"].endswith("Z"), "the defaulter stamps runtimePatches[].time"
        _check_sigterm_stops_it_cleanly(session, name, flags)
