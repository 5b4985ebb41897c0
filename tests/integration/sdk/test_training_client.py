"""``TrainingClient`` against a ``trainop local up`` cluster: every kind, functions, waits, logs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.sdk.jobs import ALL_KINDS, LAYOUTS, printing_job
from tests.polling import wait_for
from trainop import errors
from trainop.api.kinds import kind_info
from trainop.sdk import Container, JobFailedError, TrainingClient, WaitTimeoutError, build_job

ROOT = Path(__file__).resolve().parents[3]


def until_gone(client: TrainingClient, name: str, kind: str, timeout: float = 30) -> None:
    wait_for(
        lambda: name not in [job.metadata.name for job in client.list_jobs(job_kind=kind)],
        timeout=timeout,
        what=f"{kind} {name} no longer listed",
        interval=0.1,
    )


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_every_kind_from_a_manifest_succeeds_logs_lists_and_deletes(
    client: TrainingClient, name: str, kind: str
) -> None:
    created = client.create_job(printing_job(kind, name))
    assert created.kind == kind

    job = client.wait_for_job_conditions(name, job_kind=kind, wait_timeout=90, polling_interval=1)
    assert client.is_job_succeeded(job=job)
    assert client.is_job_created(name, job_kind=kind)
    assert not client.is_job_failed(name, job_kind=kind)

    replica_type = list(LAYOUTS[kind])[-1].lower()
    pod = f"{name}-{replica_type}-0"
    # the job succeeds with its first role: under load this replica may still be starting
    wait_for(
        lambda: (
            client.get_job_logs(
                name, job_kind=kind, is_master=False, replica_type=replica_type, replica_index=0
            )[0]
            == {pod: f"hello from {pod}"}
        ),
        timeout=60,
        what=f"the log of {pod}",
        interval=0.5,
    )

    assert name in [j.metadata.name for j in client.list_jobs(job_kind=kind)]
    client.delete_job(name, job_kind=kind)
    until_gone(client, name, kind)
    with pytest.raises(errors.NotFoundError):
        client.get_job(name, job_kind=kind)


def test_a_function_runs_in_every_replica_with_its_rank(client: TrainingClient, name: str) -> None:
    def train(settings: dict[str, str]) -> None:
        import os

        rank, size = os.environ["RANK"], os.environ["WORLD_SIZE"]
        print(f"{settings['greeting']} from rank {rank} of {size}")

    client.create_job(name=name, train_func=train, parameters={"greeting": "hi"}, num_workers=2)
    client.wait_for_job_conditions(name, wait_timeout=90, polling_interval=1)

    logs, _ = client.get_job_logs(name, is_master=False)
    assert logs == {
        f"{name}-master-0": "hi from rank 0 of 2",
        f"{name}-worker-0": "hi from rank 1 of 2",
    }
    client.delete_job(name)


def test_waiting_for_success_raises_when_the_job_fails(client: TrainingClient, name: str) -> None:
    manifest = printing_job("PyTorchJob", name, code="raise SystemExit(3)")
    for spec in manifest["spec"]["pytorchReplicaSpecs"].values():
        spec["restartPolicy"] = "Never"
    client.create_job(manifest)
    with pytest.raises(JobFailedError, match=f"PyTorchJob default/{name} is Failed") as failed:
        client.wait_for_job_conditions(name, wait_timeout=60, polling_interval=1)
    assert isinstance(failed.value, RuntimeError)  # what upstream scripts catch
    assert client.is_job_failed(name)
    # Waiting for Failed itself returns the job instead.
    assert client.is_job_failed(
        job=client.wait_for_job_conditions(name, expected_conditions={"Failed"})
    )
    client.delete_job(name)


def test_waiting_times_out_with_a_clear_error(client: TrainingClient, name: str) -> None:
    client.create_job(printing_job("PyTorchJob", name, code="import time; time.sleep(60)"))
    try:
        started = time.monotonic()
        with pytest.raises(WaitTimeoutError, match=f"PyTorchJob default/{name}") as timed_out:
            client.wait_for_job_conditions(name, wait_timeout=1, polling_interval=1)
        assert time.monotonic() - started < 10
        assert isinstance(timed_out.value, TimeoutError)
    finally:
        client.delete_job(name)


def test_following_logs_prints_prefixed_lines_and_ends_with_the_job(
    client: TrainingClient, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = "import time\nfor i in range(3):\n    print('step', i, flush=True); time.sleep(0.3)"
    client.create_job(printing_job("PyTorchJob", name, code=code))
    logs, _ = client.get_job_logs(name, is_master=False, follow=True)

    assert client.is_job_succeeded(name)  # follow returned because the job ended
    assert logs[f"{name}-master-0"] == "step 0\nstep 1\nstep 2"
    assert logs[f"{name}-worker-0"] == "step 0\nstep 1\nstep 2"
    assert f"[Pod {name}-worker-0]: step 2" in capsys.readouterr().out
    client.delete_job(name)


def test_following_logs_reads_each_instance_of_a_container_restarted_in_place(
    client: TrainingClient, name: str, tmp_path: Path
) -> None:
    # the first run fails, the kubelet restarts the container in place (restartCount 1, after
    # its back-off), the second succeeds: one stream per instance, so both runs' lines, once
    marker = tmp_path / "ran"
    code = (
        "import pathlib, sys\n"
        f"marker = pathlib.Path({str(marker)!r})\n"
        "first = not marker.exists(); marker.touch()\n"
        "print('run', 1 if first else 2, flush=True)\n"
        "sys.exit(1 if first else 0)"
    )
    manifest = build_job(
        info=kind_info("PyTorchJob"),
        name=name,
        replicas={"Master": 1},
        container=Container(image="python:3.11", command=[sys.executable, "-c", code]),
        restart_policy="OnFailure",
    )
    client.create_job(manifest)
    logs, _ = client.get_job_logs(name, follow=True)

    assert client.is_job_succeeded(name)
    assert logs == {f"{name}-master-0": "run 1\nrun 2"}
    pod = client.get_job_pods(name)[0]
    assert pod["status"]["containerStatuses"][0]["restartCount"] == 1
    client.delete_job(name)


def test_following_logs_of_a_job_deleted_meanwhile_ends_with_not_found(
    client: TrainingClient, name: str
) -> None:
    code = "import time; print('up', flush=True); time.sleep(120)"
    client.create_job(printing_job("PyTorchJob", name, code=code))
    seen: list[str] = []

    def follow_and_delete_at_the_first_line() -> None:
        for _, line in client.iter_job_logs(name, is_master=True, follow=True, timeout=60):
            seen.append(line)
            client.delete_job(name)

    with pytest.raises(errors.NotFoundError, match="deleted"):
        follow_and_delete_at_the_first_line()
    assert seen == ["up"]


def test_an_upstream_script_runs_with_only_the_import_changed(kubeconfig: Path) -> None:
    script = ROOT / "examples" / "sdk" / "upstream_script.py"
    assert "from trainop.sdk import TrainingClient" in script.read_text()
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=180
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[Pod pytorch-upstream-script-master-0]: epoch 2 done" in done.stdout
    assert "deleted pytorch-upstream-script" in done.stdout
