"""The container runtime's pure rules and the podman calls it makes (a fake podman records
them; the real one runs in tests/e2e/test_containers.py)."""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import os
import stat
from pathlib import Path

import pytest

from trainop.cluster.kubelet.runtimes import cdi, containercli, containers, images, network, options
from trainop.cluster.kubelet.runtimes.runtime import Launch, Report, StartError, Target
from trainop.local import runtimes

ENTRY = {"Entrypoint": ["python3", "/opt/train/ddp.py"], "Cmd": ["--epochs", "1"]}


@pytest.mark.parametrize(
    ("command", "args", "expected"),
    [
        ([], [], ["python3", "/opt/train/ddp.py", "--epochs", "1"]),
        ([], ["--epochs", "3"], ["python3", "/opt/train/ddp.py", "--epochs", "3"]),
        (["sh", "-c"], [], ["sh", "-c"]),  # command drops the image's cmd too
        (["sh", "-c"], ["echo hi"], ["sh", "-c", "echo hi"]),
    ],
)
def test_command_and_args_combine_with_the_image_as_kubelet_does(
    command: list[str], args: list[str], expected: list[str]
) -> None:
    assert images.combine(ENTRY, command=command, args=args) == expected


@pytest.mark.parametrize(
    ("spec", "policy"),
    [
        ({"image": "a/b:1"}, "IfNotPresent"),
        ({"image": "a/b"}, "Always"),
        ({"image": "a/b:latest"}, "Always"),
        ({"image": "localhost:5000/b"}, "Always"),  # the port is not a tag
        ({"image": "a/b:latest@sha256:" + "0" * 64}, "Always"),  # the server's rule
        ({"image": "a/b@sha256:" + "0" * 64}, "IfNotPresent"),
        ({"image": "a/b:1", "imagePullPolicy": "Never"}, "Never"),
    ],
)
def test_pull_policy_defaults_as_the_api_server_does(spec: dict[str, str], policy: str) -> None:
    assert images.pull_policy(spec) == policy


def test_volume_mounts_bind_the_sandbox_directories_at_their_mount_paths(tmp_path: Path) -> None:
    spec = {
        "volumeMounts": [
            {"name": "data", "mountPath": "/data"},
            {"name": "conf", "mountPath": "/etc/app", "readOnly": True, "subPath": "x"},
        ]
    }
    launch = _launch(tmp_path, spec, volumes={"data": tmp_path / "d", "conf": tmp_path / "c"})
    assert options.mounts(launch) == [
        f"type=bind,source={tmp_path / 'd'},destination=/data",
        f"type=bind,source={tmp_path / 'c' / 'x'},destination=/etc/app,ro=true",
    ]


LIMITED = {"resources": {"limits": {"memory": "64Mi", "cpu": "1500m", "nvidia.com/gpu": 1}}}


@pytest.mark.parametrize("path", ["/d,source=/etc", '/d",ro=false', "/plain"])
def test_a_mount_path_is_one_option_whatever_it_holds(tmp_path: Path, path: str) -> None:
    """A ``mountPath`` is any path: a comma or a quote in it never adds a mount option
    (read back as the CSV both runtimes parse), and plain paths stay unquoted."""
    spec = {"volumeMounts": [{"name": "data", "mountPath": path, "readOnly": True}]}
    launch = _launch(tmp_path, spec, volumes={"data": tmp_path / "d"})
    (value,) = options.mounts(launch)
    assert next(csv.reader([value])) == [
        "type=bind",
        f"source={tmp_path / 'd'}",
        f"destination={path}",
        "ro=true",
    ]
    if path == "/plain":
        assert value == f"type=bind,source={tmp_path / 'd'},destination=/plain,ro=true"


def test_resource_limits_become_container_limits() -> None:
    both = ["--memory", "67108864", "--cpus", "1.500"]
    assert options.limits(LIMITED) == (both, [])  # controllers unknown: every flag
    assert options.limits(LIMITED, {"cpu", "memory", "pids"}) == (both, [])
    assert options.limits({"resources": {"requests": {"cpu": "1"}}}) == ([], [])


def test_a_limit_whose_cgroup_controller_is_missing_is_a_warning_not_a_flag() -> None:
    words, warnings = options.limits(LIMITED, {"cpu", "pids"})
    assert words == ["--cpus", "1.500"]
    assert [w.reason for w in warnings] == ["ResourceLimitsIgnored"]
    assert warnings[0].message == (
        "limits.memory 64Mi is not applied: podman cannot use the cgroup memory controller "
        "on this machine (usable controllers: cpu, pids); the container runs without this limit"
    )
    words, warnings = options.limits(LIMITED, set())
    assert words == []
    assert [w.message.split(" is ")[0] for w in warnings] == [
        "limits.memory 64Mi",
        "limits.cpu 1500m",
    ]


def _launch(tmp_path: Path, spec: dict[str, object], **more: object) -> Launch:
    return Launch(argv=[], env={}, cwd=tmp_path, gpus=0, spec=spec, **more)  # type: ignore[arg-type]


FAKE = """#!/bin/sh
printf '%s\\n' "$*" >> "{log}"
env | grep -E '^(MASTER_ADDR|SECRET)=' >> "{log}" || true
case "$*" in
  *"image exists -- localhost/trainop-pause:1"*) exit {pause} ;;
  *"image exists"*) exit {exists} ;;
  *"cgroupfs pull "*) echo "Error: pinging container registry: connection refused" >&2; exit 125 ;;
  *"image inspect"*) [ {exists} = 0 ] || exit 125
    echo '[{{"Config": {{"Entrypoint": ["python3"], "Cmd": ["x.py"]}}}}]' ;;
  *"cgroupfs run --detach "*) exit 0 ;;
  *"cgroupfs run "*) echo from-container; exit 3 ;;
  *"inspect --format json -- trainop-s1-default-job-master-0_pod"*)
    echo '[{{"NetworkSettings": {{"Networks": {{"trainop-s1": '\\
      '{{"IPAddress": "10.89.0.7"}}}}}}}}]' ;;
  *"cgroupfs inspect "*) echo '[{{"State": {{"ExitCode": 3, "OOMKilled": false}}}}]' ;;
esac
"""


def _fake_podman(
    tmp_path: Path, *, image_exists: bool, pause_exists: bool = True
) -> tuple[containercli.Podman, Path]:
    log = tmp_path / "calls.log"
    binary = tmp_path / "podman"
    exists, pause = (0 if image_exists else 1), (0 if pause_exists else 1)
    binary.write_text(FAKE.format(log=log, exists=exists, pause=pause))
    binary.chmod(stat.S_IRWXU)
    return containercli.Podman(tmp_path / "state", binary=str(binary)), log


TARGET = Target("default", "job-master-0", "uid", "pytorch", "job-master-0")


def test_a_run_is_podman_run_with_labels_network_aliases_and_the_pods_env_only(
    tmp_path: Path,
) -> None:
    podman, log = _fake_podman(tmp_path, image_exists=True)
    runtime = containers.ContainerRuntime(podman, session="s1")
    runtime.network = "trainop-s1"
    spec = {"name": "pytorch", "image": "img:1", "args": ["--fast"], "workingDir": "/w"}
    launch = Launch(
        argv=[],
        env={"PATH": "/host/bin", "SECRET": "host-only"},
        cwd=tmp_path,
        gpus=0,
        args=["--fast"],
        spec=spec,
        pod_env={"MASTER_ADDR": "job-master-0"},
    )

    reports: list[tuple[str, str, str]] = []

    async def scenario() -> tuple[int, tuple[int, str], bytes]:
        running = await runtime.start(TARGET, launch, launch.env, _recorder(reports))
        out = await running.stdout.read()
        code = await running.wait()
        return code, await running.outcome(code, killed_by_kubelet=False), out

    code, outcome, out = asyncio.run(scenario())
    calls = log.read_text()
    run = next(line for line in calls.splitlines() if " run " in f" {line} ")
    assert out == b"from-container\n"
    assert code == 3
    assert outcome == (3, "Error")
    assert "--label trainop.session=s1" in run
    assert "--label trainop.pod=default/job-master-0" in run
    assert "--network trainop-s1 --network-alias job-master-0" in run
    assert "--network-alias job-master-0.default.svc" in run
    assert "--workdir /w" in run
    assert "--runtime runc --cgroup-manager cgroupfs" in run
    assert "--env MASTER_ADDR " in run
    assert "job-master-0 --env" not in run
    assert '--entrypoint ["python3", "--fast"] -- img:1' in run
    assert "MASTER_ADDR=job-master-0" in calls
    assert "SECRET=host-only" not in calls
    assert reports == [("Normal", "Pulled", 'Container image "img:1" already present on machine')]


PAIR = {"containers": [{"name": "pytorch"}, {"name": "sidecar"}]}
HOLDER = "trainop-s1-default-job-master-0_pod"
CONTAINER = "trainop-s1-default-job-master-0"


def _networked(
    tmp_path: Path, *, pause_exists: bool = True
) -> tuple[containers.ContainerRuntime, Path]:
    """A runtime on session s1's network over the recording fake podman, and its log."""
    podman, log = _fake_podman(tmp_path, image_exists=True, pause_exists=pause_exists)
    runtime = containers.ContainerRuntime(podman, session="s1")
    runtime.network = "trainop-s1"
    return runtime, log


def _start_both(
    runtime: containers.ContainerRuntime, tmp_path: Path, reports: list[tuple[str, str, str]]
) -> str:
    """Prepare a two-container pod, start (wait for, finish) both containers, release the
    pod, close the runtime; the address ``prepare`` gave."""

    async def scenario() -> str:
        address = await runtime.prepare(TARGET, PAIR, _recorder(reports))
        for name in ("pytorch", "sidecar"):
            spec = {"name": name, "image": "img:1", "command": ["true"]}
            launch = _launch(tmp_path, spec, pod_spec=PAIR, command=["true"])
            target = dataclasses.replace(TARGET, container=name)
            running = await runtime.start(target, launch, {}, _recorder(reports))
            await running.wait()
            await running.finish()
        await runtime.release(TARGET.uid)
        await runtime.close()  # after the pod's removal (in the background) has ended
        return address

    return asyncio.run(scenario())


def test_the_containers_of_a_pod_share_one_holders_network_and_hostname(
    tmp_path: Path,
) -> None:
    """As a pod's pause container: one holder per pod carries the pod's hostname, network
    names and DNS settings, and its address is the pod's; each container joins its network
    and UTS namespaces (one ``localhost``); the holder goes when the pod is released."""
    runtime, log = _networked(tmp_path)
    reports: list[tuple[str, str, str]] = []
    assert _start_both(runtime, tmp_path, reports) == "10.89.0.7"
    calls = log.read_text().splitlines()
    holders = [line for line in calls if " run --detach " in f" {line} "]
    assert len(holders) == 1  # once per pod, not per container
    assert f"--name {HOLDER} " in holders[0]
    assert (
        "--hostname job-master-0 --network trainop-s1 --network-alias job-master-0" in (holders[0])
    )
    assert holders[0].endswith(" localhost/trainop-pause:1")
    assert "--label trainop.holder=true" in holders[0]
    # the holder's quiet run is the network's first container: no separate DNS holder
    assert not [line for line in calls if " create --name trainop-s1-dns " in f" {line} "]
    runs = [line for line in calls if " run --name " in f" {line} "]
    assert len(runs) == 2
    for run in runs:
        assert f"--network container:{HOLDER} --uts container:{HOLDER}" in run
        assert "--hostname" not in run
        assert "--network-alias" not in run
    # released with the pod: its holder and its containers in one call, dependents first
    rms = [line for line in calls if " rm " in f" {line} "]
    assert len(rms) == 1
    assert rms[0].endswith(f"rm -f -t 0 --depend {HOLDER} {CONTAINER}-pytorch {CONTAINER}-sidecar")
    assert not [r for r in reports if r[0] == "Warning"]


def test_without_a_pause_binary_each_container_keeps_an_identity_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(images, "find_pause_binary", lambda: None)
    runtime, log = _networked(tmp_path, pause_exists=False)
    reports: list[tuple[str, str, str]] = []
    assert _start_both(runtime, tmp_path, reports) == ""  # no address of its own
    calls = log.read_text()
    assert " run --detach " not in calls
    assert calls.count("--network trainop-s1 --network-alias job-master-0") == 2
    dns = calls.index(" create --name trainop-s1-dns ")  # no holder: the DNS one comes first
    assert dns < calls.index(" run --name ")
    warned = [r for r in reports if r[1] == network.POD_NOT_SHARED]
    assert warned == [
        (
            "Warning",
            "PodNamespacesNotShared",
            "the pod's containers do not share localhost and hostname: no catatonit on this "
            "machine to make localhost/trainop-pause:1 from",
        )
    ]


def test_the_pause_image_is_imported_once_from_the_machines_catatonit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    binary = tmp_path / "catatonit"
    binary.write_bytes(b"\x7fELF static")
    binary.chmod(0o700)
    monkeypatch.setattr(images, "find_pause_binary", lambda: binary)
    runtime, log = _networked(tmp_path, pause_exists=False)
    _start_both(runtime, tmp_path, [])
    imports = [line for line in log.read_text().splitlines() if " import " in f" {line} "]
    assert len(imports) == 1
    assert 'import --change ENTRYPOINT ["/catatonit", "-P"] ' in imports[0]
    assert imports[0].endswith(" localhost/trainop-pause:1")
    assert not (tmp_path / "state" / "pause.tar").exists()  # read by the import, then removed


def test_a_pod_of_one_container_without_a_holder_warns_of_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing to share: no Warning; the container has the pod's identity itself."""
    monkeypatch.setattr(images, "find_pause_binary", lambda: None)
    runtime, log = _networked(tmp_path, pause_exists=False)
    spec = {"name": "pytorch", "image": "img:1", "command": ["true"]}
    one = {"containers": [spec]}
    reports: list[tuple[str, str, str]] = []

    async def scenario() -> str:
        address = await runtime.prepare(TARGET, one, _recorder(reports))
        launch = _launch(tmp_path, spec, pod_spec=one, command=["true"])
        await (await runtime.start(TARGET, launch, {})).wait()
        await runtime.release(TARGET.uid)
        return address

    assert asyncio.run(scenario()) == ""
    assert reports == []
    calls = log.read_text()
    assert "--hostname job-master-0 --network trainop-s1 --network-alias job-master-0" in calls
    assert HOLDER not in calls


def test_a_missing_image_is_err_image_pull_with_the_runtimes_last_message(
    tmp_path: Path,
) -> None:
    podman, _ = _fake_podman(tmp_path, image_exists=False)
    runtime = containers.ContainerRuntime(podman, session="s1")
    launch = _launch(tmp_path, {"name": "c", "image": "img:1"})
    reports: list[tuple[str, str, str]] = []
    with pytest.raises(StartError) as caught:
        asyncio.run(runtime.start(TARGET, launch, {}, _recorder(reports)))
    assert reports == [("Normal", "Pulling", 'Pulling image "img:1"')]  # then podrun's Failed
    assert caught.value.reason == "ErrImagePull"
    assert caught.value.image == "img:1"
    assert str(caught.value) == (
        'failed to pull image "img:1": Error: pinging container registry: connection refused'
    )


@pytest.mark.parametrize("image", ["--help", "--privileged", "-v=/:/host"])
def test_an_image_that_looks_like_an_option_is_never_read_as_one(
    tmp_path: Path, image: str
) -> None:
    """Every call names the manifest's image after ``--``: ``--help`` is an image name
    (which no registry has), not podman's help, which exits 0 as if the image existed."""
    podman, log = _fake_podman(tmp_path, image_exists=False)
    runtime = containers.ContainerRuntime(podman, session="s1")
    launch = _launch(tmp_path, {"name": "c", "image": image})
    with pytest.raises(StartError) as caught:
        asyncio.run(runtime.start(TARGET, launch, {}))
    assert caught.value.reason == "ErrImagePull"
    calls = log.read_text().splitlines()
    named = [line for line in calls if image in line.split()]
    assert named, calls
    assert all(f" -- {image}" in line for line in named), named


def test_never_pull_of_a_missing_image_is_err_image_never_pull(tmp_path: Path) -> None:
    podman, log = _fake_podman(tmp_path, image_exists=False)
    runtime = containers.ContainerRuntime(podman, session="s1")
    launch = _launch(tmp_path, {"name": "c", "image": "img:1", "imagePullPolicy": "Never"})
    with pytest.raises(StartError) as caught:
        asyncio.run(runtime.start(TARGET, launch, {}))
    assert caught.value.reason == "ErrImageNeverPull"
    assert str(caught.value) == 'Container image "img:1" is not present with pull policy of Never'
    assert "pull" not in log.read_text()


def _recorder(reports: list[tuple[str, str, str]]) -> Report:
    def report(type_: str, reason: str, message: str) -> None:
        reports.append((type_, reason, message))

    return report


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        *[(0, "0s"), (0.0004, "0s"), (0.532, "532ms"), (1.2, "1.2s"), (1.2345, "1.234s")],
        *[(60, "1m0s"), (123.456, "2m3.456s"), (3600, "1h0m0s"), (3725.5, "1h2m5.5s")],
    ],
)
def test_durations_print_as_go_prints_them_truncated_to_milliseconds(
    seconds: float, shown: str
) -> None:
    assert images.go_duration(seconds) == shown


def test_a_pull_is_reported_as_kubelet_words_it() -> None:
    assert images.pulled_message("busybox:1", 1.5, 4_300_000) == (
        'Successfully pulled image "busybox:1" in 1.5s (1.5s including waiting). '
        "Image size: 4300000 bytes."
    )


def _job(command: list[str] | None) -> dict[str, object]:
    container: dict[str, object] = {"name": "pytorch", "image": "img:1"}
    if command:
        container["command"] = command
    template = {"spec": {"containers": [container]}}
    return {"spec": {"pytorchReplicaSpecs": {"Master": {"template": template}}}}


def test_auto_keeps_processes_when_every_container_has_a_command(tmp_path: Path) -> None:
    choice = asyncio.run(runtimes.choose("auto", state_dir=tmp_path, job=_job(["python3"])))
    assert choice.runtime is None
    assert choice.line.startswith("runtime: process (auto:")


def test_auto_falls_back_to_processes_without_podman(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no podman, no docker on it
    choice = asyncio.run(runtimes.choose("auto", state_dir=tmp_path, job=_job(None)))
    assert choice.runtime is None
    assert choice.line == "runtime: process (auto: neither podman nor docker works here)"


def test_auto_picks_podman_for_a_container_without_command_when_it_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bin").mkdir()
    binary = tmp_path / "bin" / "podman"
    binary.write_text("#!/bin/sh\necho '{}'\n")  # `podman info --format json` answers
    binary.chmod(stat.S_IRWXU)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    choice = asyncio.run(runtimes.choose("auto", state_dir=tmp_path / "state", job=_job(None)))
    assert isinstance(choice.runtime, containers.ContainerRuntime)
    assert choice.line == (
        "runtime: podman (auto: no command in master/pytorch; a network of their own)"
    )


def test_without_a_network_containers_use_the_hosts_with_loopback_addressing(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.log"
    binary = tmp_path / "podman"
    script = '#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\n'
    script += 'case "$*" in *"network create"*) exit 125 ;; esac\n'
    binary.write_text(script.format(log=log))
    binary.chmod(stat.S_IRWXU)
    runtime = containers.ContainerRuntime(
        containercli.Podman(tmp_path / "state", binary=str(binary)), session="s2"
    )
    asyncio.run(runtime.open())
    assert runtime.network == ""
    assert runtime.addresses_by_name is False
    words = runtime._run_options(TARGET, _launch(tmp_path, {"name": "c"}), "n")
    assert words[words.index("--network") + 1] == "host"
    assert "--network-alias" not in words


def test_every_container_gets_the_exec_endpoint_and_clients_mounted(tmp_path: Path) -> None:
    """``open`` makes the directory the kubelet's exec server listens in (``exec_socket``)
    with the exec and ssh clients; every run mounts it at ``EXEC_MOUNT`` and points
    ``TRAINOP_EXEC_ADDRESS`` at the socket there; ``close`` removes it."""
    podman, _ = _fake_podman(tmp_path, image_exists=True)
    runtime = containers.ContainerRuntime(podman, session="s3", network=False)
    asyncio.run(runtime.open())
    assert runtime.exec_dir == tmp_path / "state" / "exec"
    assert runtime.exec_socket == runtime.exec_dir / "exec.sock"
    found = sorted(p.name for p in runtime.exec_dir.iterdir())
    assert found == ["execclient.py", "ssh", "sshclient.py"]
    assert os.access(runtime.exec_dir / "ssh", os.X_OK)
    assert containers.exec_command() == "python3 -I -S /run/trainop/execclient.py"
    words = runtime._run_options(TARGET, _launch(tmp_path, {"name": "c"}), "n")
    mount = f"type=bind,source={runtime.exec_dir},destination=/run/trainop"
    assert words[words.index(mount) - 1] == "--mount"
    assert "TRAINOP_EXEC_ADDRESS=/run/trainop/exec.sock" in words
    assert "TRAINOP_NAMESPACE=default" in words
    asyncio.run(runtime.close())
    assert not (tmp_path / "state" / "exec").exists()


def test_a_state_directory_too_long_for_a_socket_path_uses_a_temporary_one(
    tmp_path: Path,
) -> None:
    fake, _ = _fake_podman(tmp_path, image_exists=True)
    podman = containercli.Podman(tmp_path / ("d" * 120), binary=fake.binary)
    runtime = containers.ContainerRuntime(podman, session="s4", network=False)
    asyncio.run(runtime.open())
    assert runtime.exec_socket is not None
    assert len(str(runtime.exec_socket)) <= 100
    assert (runtime.exec_socket.parent / "execclient.py").is_file()
    asyncio.run(runtime.close())
    assert not runtime.exec_socket.parent.exists()


# --- GPUs as CDI devices -------------------------------------------------------------------

CDI_SPEC = """cdiVersion: "0.5.0"
kind: nvidia.com/gpu
devices:
  - name: "0"
    containerEdits: {env: ["X=0"]}
  - name: "all"
    containerEdits: {env: ["X=all"]}
"""


def test_held_gpus_become_cdi_device_options_and_none_become_none() -> None:
    assert cdi.device_options(("0", "2")) == [
        "--device",
        "nvidia.com/gpu=0",
        "--device",
        "nvidia.com/gpu=2",
    ]
    assert cdi.device_options(()) == []


def test_a_run_passes_the_devices_it_holds_and_nothing_else(tmp_path: Path) -> None:
    runtime = containers.ContainerRuntime(containercli.Podman(tmp_path), session="s5")
    held = _launch(tmp_path, {"name": "c"}, devices=("1",))
    words = runtime._run_options(TARGET, held, "n")
    assert words[words.index("--device") + 1] == "nvidia.com/gpu=1"
    assert words.count("--device") == 1
    assert "--device" not in runtime._run_options(TARGET, _launch(tmp_path, {"name": "c"}), "n")


def test_cdi_devices_are_read_from_the_specs_of_their_kind(tmp_path: Path) -> None:
    etc, run = tmp_path / "etc", tmp_path / "run"
    etc.mkdir()
    (etc / "nvidia.yaml").write_text(CDI_SPEC)
    (etc / "other.json").write_text(
        '{"cdiVersion": "0.5.0", "kind": "acme.com/fpga", "devices": [{"name": "7"}]}'
    )
    (etc / "broken.yaml").write_text("kind: [unclosed")
    (etc / "notes.txt").write_text(CDI_SPEC.replace('"0"', '"5"'))  # not a spec file name
    assert cdi.cdi_devices("nvidia.com/gpu", (etc, run)) == {"0", "all"}
    assert cdi.cdi_devices("acme.com/fpga", (etc, run)) == {"7"}
    cdi.check_devices(("0",), (etc, run))  # defined: no error
    cdi.check_devices((), (run,))  # nothing held: nothing to check


def test_a_held_gpu_without_a_cdi_spec_is_a_start_error_that_names_the_fix(
    tmp_path: Path,
) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "nvidia.yaml").write_text(CDI_SPEC)
    with pytest.raises(StartError) as caught:
        cdi.check_devices(("0", "1"), (etc, tmp_path / "run"))
    assert (caught.value.reason, caught.value.waiting) == (
        "ContainerCannotRun",
        "CreateContainerError",
    )
    assert str(caught.value) == (
        "CDI device injection failed: unresolvable CDI devices nvidia.com/gpu=1: no CDI spec "
        f"in {etc} or {tmp_path / 'run'} defines them; make one with "
        "`nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`"
    )


def test_start_checks_the_cdi_specs_before_it_runs_anything(tmp_path: Path) -> None:
    podman, log = _fake_podman(tmp_path, image_exists=True)
    cdi = tmp_path / "cdi"
    runtime = containers.ContainerRuntime(podman, session="s6", cdi_dirs=(cdi,))
    launch = _launch(tmp_path, {"name": "c", "image": "img:1"}, devices=("0",))
    with pytest.raises(StartError, match=r"unresolvable CDI devices nvidia\.com/gpu=0"):
        asyncio.run(runtime.start(TARGET, launch, {}))
    assert " run " not in log.read_text()
    cdi.mkdir()
    (cdi / "nvidia.yaml").write_text(CDI_SPEC)

    async def started() -> int:
        return await (await runtime.start(TARGET, launch, {})).wait()

    assert asyncio.run(started()) == 3  # the fake's container ran
    run = next(line for line in log.read_text().splitlines() if " run " in f" {line} ")
    assert "--device nvidia.com/gpu=0 " in run


# --- cgroup limits where podman can set them -------------------------------------------------

INFO = """#!/bin/sh
printf '%s\\n' "$*" >> "{log}"
case "$*" in
  *"cgroupfs info "*) echo '{{"host": {{"cgroupControllers": ["cpu", "pids"]}}}}' ;;
  *"image inspect"*) echo '[{{"Config": {{"Entrypoint": ["python3"]}}}}]' ;;
esac
"""


def test_start_asks_podman_once_which_controllers_it_can_use_and_warns_per_start(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.log"
    binary = tmp_path / "podman"
    binary.write_text(INFO.format(log=log))
    binary.chmod(stat.S_IRWXU)
    podman = containercli.Podman(tmp_path / "state", binary=str(binary))
    runtime = containers.ContainerRuntime(podman, session="s7")
    launch = _launch(tmp_path, {"name": "c", "image": "img:1", **LIMITED})

    async def two_starts() -> list[tuple[str, ...]]:
        assert await containercli.works(podman)  # what runtimes.choose asks first
        found = []
        for _ in range(2):
            running = await runtime.start(TARGET, launch, {})
            await running.wait()
            found.append(tuple(w.reason for w in running.warnings))
        return found

    assert asyncio.run(two_starts()) == [("ResourceLimitsIgnored",)] * 2
    calls = log.read_text().splitlines()
    assert sum(" info " in f" {line} " for line in calls) == 1  # asked once per session
    runs = [line for line in calls if " run " in f" {line} "]
    assert len(runs) == 2
    assert all("--cpus 1.500" in run and "--memory" not in run for run in runs)


def test_the_first_start_on_the_network_makes_a_dns_holder_once_with_output_discarded(
    tmp_path: Path,
) -> None:
    """Podman's DNS server starts with the first container on the network and prints to that
    podman call's stderr: a holder created and initialized (never started) before the first
    run takes that place, so no replica's log shows it."""
    podman, log = _fake_podman(tmp_path, image_exists=True)
    runtime = containers.ContainerRuntime(podman, session="s8")
    runtime.network = "trainop-s8"
    launch = _launch(tmp_path, {"name": "c", "image": "img:1"})

    async def starts(runtime: containers.ContainerRuntime, count: int) -> None:
        for _ in range(count):
            await (await runtime.start(TARGET, launch, {})).wait()

    asyncio.run(starts(runtime, 2))
    calls = log.read_text().splitlines()
    verbs = [line.split()[4] for line in calls if line.split()[4] in ("create", "init", "run")]
    assert verbs == ["create", "init", "run", "run"]
    create = next(line for line in calls if " create " in line)
    assert "--name trainop-s8-dns --network trainop-s8 --label trainop.session=s8" in create
    assert '--entrypoint ["python3", "x.py"] -- img:1' in create  # the image's own executable
    assert calls[calls.index(create) + 1].endswith("cgroupfs init trainop-s8-dns")

    host_network = containers.ContainerRuntime(podman, session="s9")  # no network: no DNS
    log.unlink()
    asyncio.run(starts(host_network, 1))
    assert " create " not in log.read_text()


# --- runtime calls per pod (issue 24 item 5: container start-up) ------------------------------


def test_a_fresh_session_removes_no_leftover_before_a_names_first_run(tmp_path: Path) -> None:
    """A new session's names (its random id in each) cannot exist yet: no ``rm`` before the
    holder's or a container's first run; a second pod of the same name (same holder and
    container names, a new uid) removes the earlier one's first."""
    runtime, log = _networked(tmp_path)
    _start_both(runtime, tmp_path, [])
    first = log.read_text().splitlines()
    rms = [line for line in first if " rm " in f" {line} "]
    assert rms == [next(line for line in first if f"rm -f -t 0 --depend {HOLDER} " in line)]
    log.write_text("")
    _start_both(runtime, tmp_path, [])
    again = log.read_text().splitlines()
    holder_rm = again.index(next(line for line in again if line.endswith(f"rm -f -t 0 {HOLDER}")))
    holder_run = again.index(next(line for line in again if " run --detach " in f" {line} "))
    assert holder_rm < holder_run
    for name in ("pytorch", "sidecar"):
        container = f"trainop-s1-default-job-master-0-{name}"
        removed = [i for i, line in enumerate(again) if line.endswith(f"rm -f -t 0 {container}")]
        started = [i for i, line in enumerate(again) if f" run --name {container} " in line]
        assert removed, again
        assert removed[0] < started[0]


def test_an_adopted_session_removes_a_leftover_before_every_run(tmp_path: Path) -> None:
    runtime, log = _networked(tmp_path)
    runtime._network.adopting = True  # the daemon's next session (note 120)
    _start_both(runtime, tmp_path, [])
    calls = log.read_text().splitlines()
    assert any(
        line.endswith("rm -f -t 0 trainop-s1-default-job-master-0-pytorch") for line in calls
    )


def test_a_present_image_is_inspected_once_not_asked_about_first(tmp_path: Path) -> None:
    """``image inspect`` says whether the image is there: no ``image exists`` call for it."""
    runtime, log = _networked(tmp_path)
    _start_both(runtime, tmp_path, [])
    calls = log.read_text().splitlines()
    assert not [line for line in calls if line.endswith("image exists -- img:1")]
    assert (
        len([line for line in calls if line.endswith("image inspect --format json -- img:1")]) == 2
    )


def test_default_env_reaches_each_container_unless_its_own_env_names_it(tmp_path: Path) -> None:
    runtime, log = _networked(tmp_path)
    runtime.default_env = {"OMP_NUM_THREADS": "1"}
    spec = {"name": "c", "image": "img:1", "command": ["true"]}
    own = _launch(tmp_path, spec, command=["true"], pod_env={"OMP_NUM_THREADS": "8"})

    async def both() -> None:
        await (await runtime.start(TARGET, _launch(tmp_path, spec, command=["true"]), {})).wait()
        await (await runtime.start(TARGET, own, {})).wait()

    asyncio.run(both())
    runs = [line for line in log.read_text().splitlines() if " run --name " in f" {line} "]
    assert "--env OMP_NUM_THREADS=1 " in runs[0]
    assert "OMP_NUM_THREADS=1" not in runs[1]
    assert "--env OMP_NUM_THREADS " in runs[1]  # its own value, passed by name


def test_a_second_close_lists_nothing_again_unless_a_pod_started_since(tmp_path: Path) -> None:
    runtime, log = _networked(tmp_path)

    async def closes() -> None:
        await runtime.close()
        await runtime.close()  # the kubelet's, then the session's
        _ = await runtime.prepare(TARGET, PAIR, _recorder([]))
        await runtime.close()

    asyncio.run(closes())
    listings = [line for line in log.read_text().splitlines() if " ps -a " in f" {line} "]
    assert len(listings) == 2


SLOW_RM = """#!/bin/sh
printf '%s\\n' "$*" >> "{log}"
case "$*" in
  *"rm -f -t 0 --depend "*) {depend}; echo removed >> "{log}" ;;
  *"image inspect"*) echo '[{{"Config": {{"Entrypoint": ["python3"], "Cmd": ["x.py"]}}}}]' ;;
  *"cgroupfs run "*) exit 0 ;;
  *"cgroupfs inspect "*) echo '[{{"State": {{"ExitCode": 0, "OOMKilled": false}}}}]' ;;
esac
"""


def _slow_rm_podman(tmp_path: Path, depend: str) -> tuple[containers.ContainerRuntime, Path]:
    """A runtime over a fake podman whose ``rm --depend`` runs ``depend`` (shell)."""
    log, binary = tmp_path / "calls.log", tmp_path / "podman"
    binary.write_text(SLOW_RM.format(log=log, depend=depend))
    binary.chmod(stat.S_IRWXU)
    runtime = containers.ContainerRuntime(
        containercli.Podman(tmp_path / "state", binary=str(binary)), session="s1"
    )
    runtime.network = "trainop-s1"
    return runtime, log


def test_a_pod_of_the_same_name_runs_its_holder_once_the_earlier_pods_removal_ended(
    tmp_path: Path,
) -> None:
    """The removal runs in the background (``release`` returns at once), and a holder or a
    container whose name it removes does not run before it has ended."""
    runtime, log = _slow_rm_podman(tmp_path, "sleep 0.3")

    async def twice() -> None:
        await runtime.prepare(TARGET, PAIR, _recorder([]))
        await runtime.release(TARGET.uid)
        assert "removed" not in log.read_text()  # still removing: release did not wait
        await runtime.prepare(TARGET, PAIR, _recorder([]))
        await runtime.release(TARGET.uid)
        await runtime.close()

    asyncio.run(twice())
    calls = log.read_text().splitlines()
    runs = [i for i, line in enumerate(calls) if f"run --detach --name {HOLDER} " in line]
    assert len(runs) == 2
    removed = [i for i, line in enumerate(calls) if line == "removed"]
    assert len(removed) == 2  # both removals ended before close returned
    assert removed[0] < runs[1]  # the second holder ran once the first removal had ended


def test_where_one_removal_call_fails_each_container_then_the_holder_is_removed(
    tmp_path: Path,
) -> None:
    runtime, log = _slow_rm_podman(tmp_path, "exit 125")
    _start_both(runtime, tmp_path, [])
    rms = [line.split(" rm ")[1] for line in log.read_text().splitlines() if " rm " in line]
    assert rms == [
        f"-f -t 0 --depend {HOLDER} {CONTAINER}-pytorch {CONTAINER}-sidecar",
        f"-f -t 0 {CONTAINER}-pytorch",
        f"-f -t 0 {CONTAINER}-sidecar",
        f"-f -t 0 {HOLDER}",
    ]
