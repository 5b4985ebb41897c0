"""The container runtime's image look-ups, once per session (issue 24 item 5).
``images.Inspected``: a present image is inspected once however many containers start from
it, also when they start at once; an absent one is asked about at every start, so its errors
stay kubelet's. The holders' pause image is looked for at ``open``, not on a pod's path."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import pytest

from trainop.cluster.kubelet.runtimes import containercli, containers, images
from trainop.cluster.kubelet.runtimes.runtime import StartError, Target, no_report

FAKE = """#!/bin/sh
printf '%s\\n' "$*" >> "{log}"
case "$*" in
  *"image inspect"*"-- here:1"*) sleep 0.2; echo '[{{"Config": {{"Cmd": ["x"]}}}}]' ;;
  *" pull "*) echo "Error: no registry" >&2; exit 125 ;;
  *"image inspect"*) [ -e "{there}" ] || exit 125; echo '[{{"Config": {{"Cmd": ["y"]}}}}]' ;;
esac
"""


def _podman(tmp_path: Path) -> tuple[containercli.Podman, Path, Path]:
    log, there = tmp_path / "calls.log", tmp_path / "pulled"
    binary = tmp_path / "podman"
    binary.write_text(FAKE.format(log=log, there=there))
    binary.chmod(stat.S_IRWXU)
    return containercli.Podman(tmp_path / "state", binary=str(binary)), log, there


def _inspects(log: Path, image: str) -> int:
    lines = log.read_text().splitlines() if log.exists() else []
    return len([line for line in lines if line.endswith(f"image inspect --format json -- {image}")])


def test_starts_at_once_share_one_inspect_of_a_present_image(tmp_path: Path) -> None:
    podman, log, _ = _podman(tmp_path)
    cache = images.Inspected(podman)

    async def three() -> list[object]:
        return list(await asyncio.gather(*(cache.get("here:1") for _ in range(3))))

    found = asyncio.run(three())
    assert found == [{"Config": {"Cmd": ["x"]}}] * 3
    assert _inspects(log, "here:1") == 1
    assert asyncio.run(cache.get("here:1")) == {"Config": {"Cmd": ["x"]}}
    assert _inspects(log, "here:1") == 1


def test_an_absent_image_is_asked_again_and_fresh_asks_again(tmp_path: Path) -> None:
    podman, log, there = _podman(tmp_path)
    cache = images.Inspected(podman)
    assert asyncio.run(cache.get("gone:1")) == {}
    assert asyncio.run(cache.get("gone:1")) == {}
    assert _inspects(log, "gone:1") == 2  # not remembered: ensure then pulls or refuses
    there.touch()  # pulled meanwhile
    assert asyncio.run(cache.get("gone:1", fresh=True)) == {"Config": {"Cmd": ["y"]}}
    assert asyncio.run(cache.get("gone:1")) == {"Config": {"Cmd": ["y"]}}
    assert _inspects(log, "gone:1") == 3


@pytest.mark.parametrize("policy", ["IfNotPresent", "Never"])
def test_an_absent_image_still_fails_each_start(tmp_path: Path, policy: str) -> None:
    """The cache keeps no negative answer: the second start refuses as the first did."""
    podman, _, _ = _podman(tmp_path)
    cache = images.Inspected(podman)
    reasons = []
    for _ in range(2):
        found = asyncio.run(cache.get("gone:1"))
        with pytest.raises(StartError) as caught:
            asyncio.run(
                images.ensure(podman, "gone:1", policy, lambda *_: None, present=bool(found))
            )
        reasons.append(caught.value.reason)
    expected = "ErrImageNeverPull" if policy == "Never" else "ErrImagePull"
    assert reasons == [expected, expected]


def test_open_looks_for_the_pause_image_once_and_the_first_pod_asks_no_more(
    tmp_path: Path,
) -> None:
    """The holders' image is found while the runtime opens (with the API server's start),
    not on the first pod's path; the pod's ``prepare`` then makes no ``image exists`` call."""
    log = tmp_path / "calls.log"
    binary = tmp_path / "podman"
    script = '#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\n'
    script += 'case "$*" in *"inspect --format json -- trainop-s4-default-p_pod"*)\n'
    script += '  echo \'[{{"NetworkSettings": {{"Networks": {{"trainop-s4": '
    script += '{{"IPAddress": "10.89.0.9"}}}}}}}}]\' ;; esac\n'
    binary.write_text(script.format(log=log))
    binary.chmod(stat.S_IRWXU)
    podman = containercli.Podman(tmp_path / "state", binary=str(binary))
    runtime = containers.ContainerRuntime(podman, session="s4")
    target = Target("default", "p", "uid", "c", "p")

    def pause_lookups() -> int:
        lines = log.read_text().splitlines()
        return len([line for line in lines if line.endswith(f"-- {images.PAUSE_IMAGE}")])

    asyncio.run(runtime.open())
    assert runtime.network == "trainop-s4"
    assert pause_lookups() == 1
    assert asyncio.run(runtime.prepare(target, {"containers": [{"name": "c"}]}, no_report))
    assert pause_lookups() == 1
