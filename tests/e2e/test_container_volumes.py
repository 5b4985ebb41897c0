"""Local volumes under the container runtime (Podman): ``trainop local up --runtime podman``,
then kubectl. A claim bound by the local provisioner is bind-mounted into the containers:
one pod writes, the next reads; a ``readOnly`` claim is mounted read-only (the write fails
with EROFS, as root too); the downward API resolves label and annotation fieldRefs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_containers import TRAINOP, podman  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.e2e, pytest.mark.containers]
IMAGE = "localhost/trainop-debian-py:12"

CLAIM = """apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: shared}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
"""


def _pod(name: str, script: str, *, read_only: bool = False) -> str:
    return f"""apiVersion: v1
kind: Pod
metadata:
  name: {name}
  labels: {{app: volumes}}
  annotations: {{note: kept}}
spec:
  restartPolicy: Never
  volumes:
    - name: data
      persistentVolumeClaim: {{claimName: shared, readOnly: {str(read_only).lower()}}}
  containers:
    - name: main
      image: {IMAGE}
      imagePullPolicy: Never
      command: ["sh", "-c", {script!r}]
      env:
        - {{name: APP, valueFrom: {{fieldRef: {{fieldPath: "metadata.labels['app']"}}}}}}
        - {{name: NOTE, valueFrom: {{fieldRef: {{fieldPath: "metadata.annotations['note']"}}}}}}
      volumeMounts: [{{name: data, mountPath: /data}}]
"""


def test_a_claim_is_shared_by_containers_in_sequence_and_read_only_where_asked(
    podman: Path,  # noqa: F811
) -> None:
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

    def kubectl(*words: str, stdin: str | None = None, check: bool = True) -> str:
        done = subprocess.run(
            ["kubectl", *words], input=stdin, env=env, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
        assert not check or done.returncode == 0, done.stderr
        return done.stdout

    def finished(name: str) -> str:
        kubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", f"pod/{name}", "--timeout=120s")
        return kubectl("logs", name)

    try:
        kubectl("apply", "-f", "-", stdin=CLAIM)
        kubectl("wait", "--for=jsonpath={.status.phase}=Bound", "pvc/shared", "--timeout=60s")
        write = 'echo "$APP/$NOTE" > /data/note; echo wrote'
        kubectl("apply", "-f", "-", stdin=_pod("writer", write))
        assert finished("writer").split() == ["wrote"]
        read = "cat /data/note; touch /data/x 2>/dev/null && echo writable || echo read-only"
        kubectl("apply", "-f", "-", stdin=_pod("reader", read, read_only=True))
        assert finished("reader").split() == ["volumes/kept", "read-only"]
        volume = kubectl("get", "pvc", "shared", "-o", "jsonpath={.spec.volumeName}")
        directory = Path(kubectl("get", "pv", volume, "-o", "jsonpath={.spec.hostPath.path}"))
        assert directory.parent == state / "volumes"
        assert (directory / "note").read_text() == "volumes/kept\n"
        assert not (directory / "x").exists()
    finally:
        kubectl("delete", "pod", "writer", "reader", "--wait=false", check=False)
        down = subprocess.run(
            [*TRAINOP, "local", "down", "--state-dir", str(state)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert down.returncode == 0, down.stderr
