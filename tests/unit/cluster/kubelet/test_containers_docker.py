"""The container runtime through Docker: the dialect's differences from podman (argv per
CLI, parsing docker's listings and ``info``), checked on a fake docker that records its calls
and answers with output recorded from docker 28.2's CLI and a 20.10.24 daemon (the real one
runs in tests/e2e/test_containers_docker.py)."""

from __future__ import annotations

import asyncio
import json
import stat
import sys
from pathlib import Path

import pytest

from trainop import errors
from trainop.cluster.kubelet.runtimes import containercli, containers, options
from trainop.cluster.kubelet.runtimes.runtime import Launch, StartError, Target
from trainop.local import runtimes

# Recorded on this machine (docker 28.2.2 CLI, dockerd 20.10.24+dfsg1, cgroup v1, cgroupfs).
PS_LINE = (
    '{"Command":"\\"true\\"","CreatedAt":"2026-11-24 11:05:57 +0000 UTC","ID":"24a45703c11c",'
    '"Image":"localhost/trainop-debian-py:12","Labels":"trainop.pod=ns/p,trainop.session=abc",'
    '"LocalVolumes":"0","Mounts":"","Names":"u-sample-c","Networks":"u-sample-net",'
    '"Platform":null,"Ports":"","RunningFor":"Less than a second ago",'
    '"Size":"0B (virtual 217MB)","State":"created","Status":"Created"}'
)
NETWORK_LINE = (
    '{"CreatedAt":"2026-11-24 11:05:57.242458366 +0000 UTC","Driver":"bridge",'
    '"ID":"d55f07ff8eec","IPv4":"false","IPv6":"false","Internal":"false",'
    '"Labels":"trainop.session=abc,trainop.state=/tmp/x,y,trainop.owner=1",'
    '"Name":"u-sample-net","Scope":"local"}'
)
INFO = {
    "CgroupVersion": "1",
    "CgroupDriver": "cgroupfs",
    "MemoryLimit": True,
    "CpuCfsQuota": True,
    "CpuCfsPeriod": True,
    "ServerVersion": "20.10.24+dfsg1",
    "SwapLimit": True,
}
CID = "d" * 64
TARGET = Target("default", "job-master-0", "uid", "pytorch", "job-master-0")

# A fake docker: records each call (argv, one line), answers as docker does.
FAKE = """#!{python}
import json, sys
words = sys.argv[1:]
line = " ".join(words)
with open({log!r}, "a") as log:
    print(line, file=log)
answers = json.loads({answers!r})
if words[:1] == ["run"]:
    with open(words[words.index("--cidfile") + 1], "w") as cidfile:
        cidfile.write({cid!r})
    print("from-container")
    sys.exit(3)
for prefix, (code, out) in answers.items():
    if line.startswith(prefix):
        print(out)
        sys.exit(code)
"""


def _fake(tmp_path: Path, answers: dict[str, tuple[int, str]]) -> tuple[containercli.Docker, Path]:
    log = tmp_path / "calls.log"
    binary = tmp_path / "bin" / "docker"
    binary.parent.mkdir(exist_ok=True)
    defaults = {
        "info": (0, json.dumps(INFO)),
        "image inspect -- img:1": (0, '[{"Config": {"Entrypoint": ["python3"], "Cmd": ["x.py"]}}]'),
        "image inspect": (1, ""),
        "inspect": (0, '[{"State": {"ExitCode": 3, "OOMKilled": false}}]'),
    }
    text = FAKE.format(
        python=sys.executable,
        log=str(log),
        answers=json.dumps({**answers, **{k: v for k, v in defaults.items() if k not in answers}}),
        cid=CID,
    )
    binary.write_text(text)
    binary.chmod(stat.S_IRWXU)
    return containercli.Docker(tmp_path / "state", binary=str(binary)), log


def _launch(tmp_path: Path, spec: dict[str, object], **more: object) -> Launch:
    return Launch(argv=[], env={}, cwd=tmp_path, gpus=0, spec=spec, **more)  # type: ignore[arg-type]


def test_docker_listings_give_ids_and_inspect_gives_labels_as_json(tmp_path: Path) -> None:
    """The listings' ``Labels`` strings cannot be split where a value has a comma: the ids
    they give are inspected instead."""
    assert containercli.docker_ids(f"{PS_LINE}\n") == ["24a45703c11c"]
    assert containercli.docker_ids(f"{NETWORK_LINE}\nnot json\n") == ["d55f07ff8eec"]
    labels = {"trainop.session": "abc", "trainop.state": "/tmp/x,y", "trainop.owner": "1"}
    docker, log = _fake(
        tmp_path,
        {
            "ps -a --no-trunc": (0, PS_LINE),
            "inspect 24a45703c11c": (0, json.dumps([{"Id": CID, "Config": {"Labels": labels}}])),
            "network ls --no-trunc": (0, NETWORK_LINE),
            "network inspect d55f07ff8eec": (
                0,
                json.dumps([{"Name": "u-sample-net", "Labels": labels}]),
            ),
        },
    )

    async def listed() -> tuple[object, object]:
        label = "label=trainop.session"
        return await docker.containers(label), await docker.networks(label)

    assert asyncio.run(listed()) == ([(CID, labels)], [("u-sample-net", labels)])
    calls = log.read_text().splitlines()
    assert calls[0] == "ps -a --no-trunc --filter label=trainop.session --format {{json .}}"
    assert calls[2] == ("network ls --no-trunc --filter label=trainop.session --format {{json .}}")


def test_podman_listings_are_one_json_array_with_their_own_keys() -> None:
    found = [{"Id": "a", "Labels": {"k": "v"}}, {"Id": "", "Labels": {}}, "odd"]
    assert containercli.podman_listing(found, "Id", "Labels") == [("a", {"k": "v"})]
    assert containercli.podman_listing(None, "name", "labels") == []


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        (INFO, frozenset({"cpu", "memory"})),
        ({**INFO, "MemoryLimit": False}, frozenset({"cpu"})),
        ({"CgroupVersion": "2"}, None),  # says nothing about limits: every flag
        (None, None),
    ],
)
def test_docker_info_flags_say_which_limits_work(
    info: object, expected: frozenset[str] | None
) -> None:
    assert containercli.docker_controllers(info) == expected


def test_a_limit_docker_cannot_set_is_a_warning_that_names_docker(tmp_path: Path) -> None:
    docker, _ = _fake(tmp_path, {"info": (0, json.dumps({**INFO, "MemoryLimit": False}))})
    runtime = containers.ContainerRuntime(docker, session="s4")
    spec: dict[str, object] = {
        "name": "c",
        "image": "img:1",
        "resources": {"limits": {"memory": "64Mi"}},
    }

    async def start() -> tuple[str, ...]:
        running = await runtime.start(TARGET, _launch(tmp_path, spec), {})
        await running.wait()
        return tuple(w.message for w in running.warnings)

    (message,) = asyncio.run(start())
    assert message.startswith("limits.memory 64Mi is not applied: docker cannot use the cgroup")


def test_podman_info_lists_its_controllers() -> None:
    podman = containercli.Podman(Path("/nonexistent"))
    info = {"host": {"cgroupControllers": ["cpu", "pids"]}}
    assert podman.controllers(info) == frozenset({"cpu", "pids"})
    assert podman.controllers({}) is None


def test_cdi_needs_docker_25_with_cdi_enabled() -> None:
    old = containercli.docker_device_problem(INFO)
    assert old.startswith("docker 20.10.24+dfsg1 cannot inject CDI devices")
    off = containercli.docker_device_problem({"ServerVersion": "26.1.0"})
    assert "has CDI disabled" in off
    on = {"ServerVersion": "28.2.2", "CDISpecDirs": ["/etc/cdi", "/var/run/cdi"]}
    assert containercli.docker_device_problem(on) == ""


def test_a_docker_run_is_the_podman_run_but_for_the_dialects_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same options, labels, aliases, mounts and env; docker: no global flags and no
    CONTAINERS_CONF, ``image inspect`` for presence, ``--entrypoint`` one executable with the
    rest after the image, no DNS holder, ``docker://`` ids, ``rm -f`` without ``-t``."""
    monkeypatch.delenv("CONTAINERS_CONF", raising=False)
    docker, log = _fake(tmp_path, {})
    runtime = containers.ContainerRuntime(docker, session="s1")
    runtime.network = "trainop-s1"
    spec: dict[str, object] = {"name": "pytorch", "image": "img:1", "workingDir": "/w"}
    launch = _launch(tmp_path, spec, args=["--fast"], pod_env={"MASTER_ADDR": "job-master-0"})

    async def scenario() -> tuple[int, tuple[int, str], bytes, str, list[str]]:
        running = await runtime.start(TARGET, launch, {})
        out = await running.stdout.read()
        code = await running.wait()
        outcome = await running.outcome(code, killed_by_kubelet=False)
        await running.finish()
        await runtime.release(TARGET.uid)  # the pod's container goes with the pod
        await runtime.close()
        exec_argv, _ = running.exec_argv(["hostname"], tty=False)
        return code, outcome, out, running.container_id, exec_argv

    code, outcome, out, container_id, exec_argv = asyncio.run(scenario())
    calls = log.read_text().splitlines()
    run = next(line for line in calls if line.startswith("run "))
    assert (code, outcome, out) == (3, (3, "Error"), b"from-container\n")
    assert container_id == f"docker://{CID}"
    assert calls[0] == "image inspect -- img:1"  # present: IfNotPresent pulls nothing
    assert not any(line.split()[0] in ("create", "init", "pull") for line in calls)
    assert "--runtime" not in run
    assert run.endswith("--entrypoint=python3 -- img:1 --fast")
    assert f"rm -f {options.container_name('s1', TARGET)}" in calls  # no --depend: no holder
    assert exec_argv == [docker.binary, "exec", "-i", runtime_name(), "hostname"]

    podman = containercli.Podman(tmp_path / "podman")
    words = runtime._run_options(TARGET, launch, runtime_name())  # shared by both CLIs
    assert run.startswith(" ".join(words))
    assert docker.argv("run") == [docker.binary, "run"]
    assert podman.argv("run")[1:] == ["--runtime", "runc", "--cgroup-manager", "cgroupfs", "run"]
    assert "CONTAINERS_CONF" not in docker.env()


def runtime_name() -> str:
    return options.container_name("s1", TARGET)


def test_a_missing_image_under_docker_is_err_image_pull_with_the_daemons_message(
    tmp_path: Path,
) -> None:
    message = "Error response from daemon: Get https://registry-1.docker.io/v2/: dial tcp"
    docker, log = _fake(tmp_path, {"pull --quiet": (1, message)})
    runtime = containers.ContainerRuntime(docker, session="s2")
    launch = _launch(tmp_path, {"name": "c", "image": "missing:1"})
    with pytest.raises(StartError) as raised:
        asyncio.run(runtime.start(TARGET, launch, {}))
    assert raised.value.waiting == "ErrImagePull"
    assert str(raised.value) == f'failed to pull image "missing:1": {message}'
    assert log.read_text().splitlines()[:2] == [
        "image inspect -- missing:1",
        "pull --quiet -- missing:1",
    ]


def test_gpus_on_a_docker_without_cdi_are_a_start_error_that_says_so(tmp_path: Path) -> None:
    docker, log = _fake(tmp_path, {})
    runtime = containers.ContainerRuntime(docker, session="s3")
    launch = _launch(tmp_path, {"name": "c", "image": "img:1"}, devices=("0",))
    with pytest.raises(StartError) as raised:
        asyncio.run(runtime.start(TARGET, launch, {}))
    assert raised.value.waiting == "CreateContainerError"
    assert "docker 20.10.24+dfsg1 cannot inject CDI devices" in str(raised.value)
    assert not any(line.startswith("run ") for line in log.read_text().splitlines())


def test_reaping_under_docker_removes_stale_sessions_by_their_inspected_labels(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    stale = {"trainop.session": "old", "trainop.state": str(state), "trainop.owner": "1"}
    other = {"trainop.session": "live", "trainop.state": "/elsewhere", "trainop.owner": "1"}
    docker, log = _fake(
        tmp_path,
        {
            "ps -a --no-trunc --filter label=trainop.session=old": (0, '{"ID": "c1"}'),
            "ps -a --no-trunc --filter label=trainop.session ": (
                0,
                '{"ID": "c1"}\n{"ID": "c2"}',
            ),
            # c2 went between the listing and the inspect: exit 1, c1 still printed
            "inspect c1 c2": (1, json.dumps([{"Id": "c1", "Config": {"Labels": stale}}])),
            "inspect c1": (0, json.dumps([{"Id": "c1", "Config": {"Labels": stale}}])),
            "network ls --no-trunc --filter label=trainop.session=old": (0, '{"ID": "n1"}'),
            "network ls --no-trunc --filter label=trainop.session ": (0, '{"ID": "n2"}'),
            "network inspect n1": (0, json.dumps([{"Name": "trainop-old", "Labels": stale}])),
            "network inspect n2": (0, json.dumps([{"Name": "trainop-live", "Labels": other}])),
        },
    )
    runtime = containers.ContainerRuntime(docker, session="new", network=False)
    asyncio.run(runtime.reap_stale())
    calls = log.read_text().splitlines()
    assert "rm -f c1" in calls
    assert "network rm trainop-old" in calls  # docker 20.10's CLI has no -f there
    assert not any("trainop-live" in line for line in calls if line.startswith("network rm"))
    assert not any(line.startswith("rm") and "c2" in line for line in calls)


def test_runtime_docker_where_docker_does_not_work_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no docker on it
    with pytest.raises(errors.TrainopError) as raised:
        asyncio.run(runtimes.choose("docker", state_dir=tmp_path))
    assert str(raised.value) == "--runtime docker: docker does not work here (make docker-env)"
    assert runtimes.CHOICES == ("process", "podman", "docker", "auto")


def test_auto_prefers_podman_then_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(tmp_path, {"network create": (0, "")})  # tmp_path/bin/docker
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    job = {
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"template": {"spec": {"containers": [{"name": "pytorch"}]}}}
            }
        }
    }
    choice = asyncio.run(runtimes.choose("auto", state_dir=tmp_path / "s", job=job))
    assert choice.line == (
        "runtime: docker (auto: no command in master/pytorch; a network of their own)"
    )
    up = asyncio.run(runtimes.choose("auto", state_dir=tmp_path / "s"))
    assert up.line == "runtime: docker (auto: docker works here; a network of their own)"

    podman = tmp_path / "bin" / "podman"
    podman.write_text("#!/bin/sh\necho '{}'\n")  # `podman info --format json` answers
    podman.chmod(stat.S_IRWXU)
    both = asyncio.run(runtimes.choose("auto", state_dir=tmp_path / "s", job=job))
    assert both.name == "podman"
