"""``kubectl get jobs`` against ``trainop local up``: kube's Job columns, filled in by the local
Job controller's status (note 130)."""

from __future__ import annotations

from pathlib import Path

from tests import polling
from tests.integration.kubectl.conftest import Kubectl, write

JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: twice
spec:
  completions: 2
  parallelism: 2
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: hello
          image: python:3.11
          command: ["python3", "-c", "print('done')"]
"""


def test_get_jobs_prints_status_completions_and_duration(
    kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, JOB, "job.yaml"))
    polling.wait_for(
        lambda: "Complete" in kubectl.out("get", "job", "twice", "-n", ns, "--no-headers"),
        timeout=60,
        what="the Job Complete",
        interval=0.2,
    )
    header, row = kubectl.out("get", "jobs", "-n", ns).splitlines()
    assert header.split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    name, status, completions, duration, _ = row.split()
    assert (name, status, completions) == ("twice", "Complete", "2/2")
    assert duration.endswith("s")
    wide = kubectl.out("get", "jobs", "-n", ns, "-o", "wide").splitlines()
    assert wide[0].split()[-3:] == ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert "hello" in wide[1]
    assert "python:3.11" in wide[1]
    assert "batch.kubernetes.io/controller-uid=" in wide[1]
