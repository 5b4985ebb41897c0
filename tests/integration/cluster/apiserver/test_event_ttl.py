"""Events as kube-apiserver keeps them: listed and watched like any object, deleted (watchers
see ``DELETED``) once ``event_ttl`` has passed since their last write, kept by a clean restart.
Through the official client (and ``kubectl get events``), over HTTPS, against a server with a
short TTL."""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch

from tests import polling
from tests.integration.cluster.apiserver.conftest import RunningServer, start_server

TTL = 1.5


@pytest.fixture
def short(tmp_path: Path) -> Iterator[RunningServer]:
    yield from start_server(tmp_path, event_ttl=TTL)


def _core(server: RunningServer) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=str(server.kubeconfig)))


def _event(name: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
        "reason": "Tested",
        "message": "an event",
        "type": "Normal",
    }


def _names(core: k8s.CoreV1Api) -> list[str]:
    return [e.metadata.name for e in core.list_namespaced_event("default").items]


def test_an_event_is_listed_watched_and_deleted_after_the_ttl(short: RunningServer) -> None:
    core = _core(short)
    start = core.list_namespaced_event("default").metadata.resource_version
    seen: list[tuple[str, str]] = []
    done = threading.Event()

    def follow() -> None:
        stream = watch.Watch().stream(
            _core(short).list_namespaced_event,
            "default",
            resource_version=start,
            timeout_seconds=30,
        )
        for item in stream:
            seen.append((item["type"], item["object"].metadata.name))
            if item["type"] == "DELETED":
                break
        done.set()

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    created = core.create_namespaced_event("default", _event("ev-a"))
    assert int(created.metadata.resource_version) > int(start)
    assert _names(core) == ["ev-a"]
    polling.wait_for(lambda: _names(core) == [], timeout=TTL + 20, what="the event expired")
    polling.wait_for(done.is_set, timeout=20, what="the watch saw the deletion")
    assert seen == [("ADDED", "ev-a"), ("DELETED", "ev-a")]


def test_a_write_renews_the_ttl(short: RunningServer) -> None:
    core = _core(short)
    core.create_namespaced_event("default", _event("ev-b"))
    renewed = 0

    def renew_until_past_first_expiry() -> bool:
        nonlocal renewed
        body = {"count": renewed + 2}
        core.patch_namespaced_event("ev-b", "default", body)  # 404 would raise: not expired
        renewed += 1
        return renewed >= 8  # ~TTL x 2 of renewals at the polling interval

    polling.wait_for(renew_until_past_first_expiry, timeout=30, interval=TTL / 4)
    assert _names(core) == ["ev-b"]


def test_a_clean_restart_keeps_events(tmp_path: Path) -> None:
    for server in start_server(tmp_path, event_ttl=3600):
        _core(server).create_namespaced_event("default", _event("ev-c"))
    for server in start_server(tmp_path, event_ttl=3600):
        assert _names(_core(server)) == ["ev-c"]


def test_kubectl_get_events_lists_an_event_until_it_expires(
    short: RunningServer, tmp_path: Path
) -> None:
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not installed (make kubectl-env installs it)")
    env = {"KUBECONFIG": str(short.kubeconfig), "KUBECACHEDIR": str(tmp_path / "cache")}

    def listed() -> str:
        done = subprocess.run(
            [binary, "get", "events", "-n", "default", "-o", "name"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return done.stdout.strip()

    _core(short).create_namespaced_event("default", _event("ev-d"))
    assert listed() == "event/ev-d"
    polling.wait_for(lambda: listed() == "", timeout=TTL + 30, what="kubectl saw it expire")
