"""TrainJobs under ``trainop run --runtime podman`` (issue 23 item 3 and acceptance, note 133).

A TrainJob's pods reach each other by the names and the port that Trainer's plugins write
(``PET_MASTER_ADDR=<tj>-node-0-0.<tj>``, 29500): under a container runtime each pod has its own
network namespace on the session network, whose DNS resolves JobSet pods' ``<hostname>.
<subdomain>`` (note 095), so the session plans the TrainJob as a cluster would. Case one: a
2-node x 2-process torch TrainJob in ``localhost/trainop-ddp:1`` (``make container-images``)
runs ``examples/pytorch/ddp.py`` from a read-only ``hostPath`` mount of the repository, each
node prints the master address it was given and every rank its ``PROOF ... OK``. Case two:
Ctrl-C (SIGINT to the run's process group, as a terminal sends it) while a two-step TrainJob's
trainer nodes wait, after its initializer wrote into the claim of the runtime's
``volumeClaimPolicies``: exit 130, and no container of the session, no process of the run or of
the containers, and no state or claim directory is left. Case three: two TrainJobs on the
shipped ``torch-distributed`` runtime (``trainer.image`` the local one) applied at once to
``trainop local up --runtime podman`` both Complete, each at its own master's name and both on
29500. The manifests are test-local: the ``hostPath`` names this checkout. Skipped where
podman or the images are missing (the third also where kubectl is).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.test_containers import _left, podman  # noqa: F401  (the fixture)
from tests.e2e.test_examples import PROOF_OK
from tests.polling import wait_for

ROOT = Path(__file__).resolve().parents[2]
TRAINOP = (sys.executable, "-m", "trainop.cli.main")
IMAGE = "localhost/trainop-ddp:1"
NAME = "tj-podman"
MASTER = f"{NAME}-node-0-0.{NAME}"  # upstream's rank-0 pod name, resolved by the session's DNS

pytestmark = [pytest.mark.e2e, pytest.mark.containers]


def _runtime(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {"name": name, "labels": {"trainer.kubeflow.org/framework": "torch"}},
        "spec": spec,
    }


def _trainjob(name: str, runtime: str, trainer: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name},
        "spec": {"runtimeRef": {"name": runtime, "kind": "TrainingRuntime"}, "trainer": trainer},
    }


def _step(name: str, container: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A replicated job ``name`` of one pod template with ``container``."""
    step = name.replace("node", "trainer")
    pod = {"spec": {"template": {"spec": {"containers": [{"name": name, **container}]}}}}
    return {
        "name": name,
        "template": {"metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": step}}}
        | pod,
        **extra,
    }


def ddp_manifest() -> str:
    """The torch TrainJob: the runtime mounts the checkout read-only at /repo, its working
    directory; each node says the master address the Torch plugin gave it, then torchrun."""
    repo = {"name": "repo", "hostPath": {"path": str(ROOT), "type": "Directory"}}
    container = {
        "image": IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "workingDir": "/repo",
        "volumeMounts": [{"name": "repo", "mountPath": "/repo", "readOnly": True}],
    }
    node = _step("node", container)
    node["template"]["spec"]["template"]["spec"]["volumes"] = [repo]
    spec = {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {"spec": {"replicatedJobs": [node]}},
    }
    say = "echo node $PET_NODE_RANK master=$PET_MASTER_ADDR:$PET_MASTER_PORT"
    trainer = {
        "numNodes": 2,
        "numProcPerNode": 2,
        "command": ["sh", "-c", f"{say}; exec torchrun examples/pytorch/ddp.py"],
        "env": [{"name": "PYTHONUNBUFFERED", "value": "1"}],
    }
    return yaml.safe_dump_all(
        [_runtime("torch-podman", spec), _trainjob(NAME, "torch-podman", trainer)]
    )


def test_a_two_node_torch_trainjob_rendezvouses_by_dns_names_in_containers(
    podman: Path,  # noqa: F811
) -> None:
    manifest = podman / "trainjob.yaml"
    manifest.write_text(ddp_manifest())
    done = subprocess.run(
        [*TRAINOP, "run", "--runtime", "podman", "--timeout", "240", str(manifest)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    output = done.stdout + done.stderr
    tail = output[-6000:]
    assert done.returncode == 0, tail
    assert output.splitlines()[0] == "runtime: podman (asked for; a network of their own)"
    said = re.findall(r"^\[(node-0-[01])\]\s+node (\d) master=(\S+)$", output, re.M)
    assert sorted(said) == [
        ("node-0-0", "0", f"{MASTER}:29500"),
        ("node-0-1", "1", f"{MASTER}:29500"),
    ]
    joined = re.findall(r"^\[node-0-[01]\]\s+rank \d/4: joining (\S+)$", output, re.M)
    assert joined == [f"{MASTER}:29500"] * 4, tail
    proofs = PROOF_OK.findall(output)
    assert sorted(proofs) == ["node-0-0", "node-0-0", "node-0-1", "node-0-1"], tail
    assert all(
        "world=4 allreduce sum=10 expected=10" in line
        for line in output.splitlines()
        if "PROOF" in line
    )
    assert output.splitlines()[-1].endswith(f"TrainJob/{NAME} Succeeded"), tail


WRITE = (
    "import os, sys, time\n"
    "index = os.environ.get('JOB_COMPLETION_INDEX', '')\n"
    "open('/workspace/' + sys.argv[1] + index, 'w').write('written')\n"
    "print(sys.argv[1] + index, 'wrote its file', flush=True)\n"
    "if sys.argv[1] == 'node': time.sleep(600)\n"
)


def steps_manifest(token: str) -> str:
    """A two-step TrainJob: an initializer writes into the claim ``initializer``; then two
    trainer nodes each write theirs and wait. Every container's argv carries ``token``."""
    claim = {
        "metadata": {"name": "initializer"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
    }

    def container(step: str) -> dict[str, Any]:
        return {
            "image": IMAGE,
            "imagePullPolicy": "IfNotPresent",
            "command": ["python3", "-c", WRITE, step, token],
            "volumeMounts": [{"name": "initializer", "mountPath": "/workspace"}],
        }

    after = [{"name": "dataset-initializer", "status": "Complete"}]
    jobs = [
        _step("dataset-initializer", container("dataset")),
        _step("node", container("node"), dependsOn=after),
    ]
    spec = {
        "mlPolicy": {"numNodes": 2},
        "template": {
            "spec": {"volumeClaimPolicies": [{"templates": [claim]}], "replicatedJobs": jobs}
        },
    }
    return yaml.safe_dump_all(
        [_runtime("steps-podman", spec), _trainjob("steps", "steps-podman", {})]
    )


def _processes_with(token: str) -> list[str]:
    """The command lines of this machine's processes that carry ``token``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if token.encode() in argv:
            found.append(f"{proc.name}: {b' '.join(argv)[:200]!r}")
    return found


def _in_session(sid: int) -> list[str]:
    """The processes of session ``sid`` (the run's own and whatever it started in it)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid:
            found.append(proc.name)
    return found


def test_ctrl_c_of_a_trainjob_in_containers_leaves_no_container_process_or_claim(
    podman: Path,  # noqa: F811
) -> None:
    token = f"trainop-e2e-{uuid.uuid4().hex}"
    manifest = podman / "steps.yaml"
    manifest.write_text(steps_manifest(token))
    temp = Path(os.environ["TMPDIR"])  # the fixture's private one: the run's state goes there
    process = subprocess.Popen(
        [*TRAINOP, "run", "--runtime", "podman", "--timeout", "240", str(manifest)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:

        def both_nodes_wrote() -> list[str]:
            assert process.poll() is None, "the run ended before its trainer nodes started"
            names = sorted(p.name for p in temp.glob("trainop-*/volumes/*/*"))
            return names if names == ["dataset0", "node0", "node1"] else []

        wait_for(both_nodes_wrote, timeout=180, what="the initializer and both nodes wrote")
        assert len(_left(podman)[0]) >= 2, "the trainer nodes' containers run"
        assert _processes_with(token), "the containers' processes are visible here"
        os.killpg(process.pid, signal.SIGINT)
        output, _ = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate(timeout=30)
    assert process.returncode == 128 + signal.SIGINT, output
    assert "Traceback" not in output, output
    assert _left(podman)[0] == [], "no container of the session"
    assert _processes_with(token) == [], "no process of the containers"
    assert _in_session(process.pid) == [], "no process of the run"
    assert list(temp.iterdir()) == [], "no state directory, claim directories included"


def _kubectl(env: dict[str, str], *words: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["kubectl", *words],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _shipped(name: str) -> str:
    """A 2-node TrainJob on the shipped ``torch-distributed`` runtime, in the local image with
    its own script (``/opt/train/ddp.py`` prints the master address and ``in_sync=True``)."""
    trainer = {"image": IMAGE, "numNodes": 2, "command": ["torchrun", "/opt/train/ddp.py"]}
    trainjob = _trainjob(name, "torch-distributed", trainer)
    trainjob["spec"]["runtimeRef"] = {"name": "torch-distributed"}
    return yaml.safe_dump(trainjob)


def test_two_trainjobs_at_once_under_local_up_each_rendezvous_at_their_own_master(
    podman: Path,  # noqa: F811
) -> None:
    """Each pod has its own network namespace: two TrainJobs both use port 29500 at once."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed (make kubectl-env)")
    state = podman / "cluster"
    up = subprocess.run(
        [*TRAINOP, "local", "up", "--state-dir", str(state), "--runtime", "podman"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert up.returncode == 0, up.stderr
    env = {**os.environ, "KUBECONFIG": str(state / "kubeconfig")}
    try:
        for name in ("tj-one", "tj-two"):
            _kubectl(env, "apply", "-f", "-", stdin=_shipped(name))
        complete = "jsonpath={.items[*].status.conditions[?(@.type=='Complete')].status}"

        def both_complete() -> bool:
            return _kubectl(env, "get", "trainjobs", "-o", complete).split() == ["True", "True"]

        wait_for(both_complete, timeout=240, what="both TrainJobs Complete", interval=1)
        for name in ("tj-one", "tj-two"):
            selector = f"jobset.sigs.k8s.io/jobset-name={name}"
            logs = _kubectl(env, "logs", "-l", selector, "--prefix=false", "--tail=-1")
            masters = re.findall(r"^ddp rank=\d world=2 master=(\S+) .*in_sync=True$", logs, re.M)
            assert masters == [f"{name}-node-0-0.{name}"] * 2, logs
            annotations = _kubectl(env, "get", "trainjob", name, "-o", "jsonpath={.metadata}")
            assert "local.trainop.dev/ports" not in annotations  # upstream's port, as on a cluster
    finally:
        down = subprocess.run(
            [*TRAINOP, "local", "down", "--state-dir", str(state)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert down.returncode == 0, down.stderr
