"""Pods run as processes: phases, init containers, logs through the official client."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import kubernetes

from tests.integration.cluster.kubelet.conftest import Site
from tests.integration.cluster.kubelet.harness import Local, pod, py, run_local

STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z ")


def official(site: Site) -> Any:
    config = kubernetes.client.Configuration()
    kubernetes.config.load_kube_config(
        config_file=str(site.server.kubeconfig), client_configuration=config
    )
    return kubernetes.client.CoreV1Api(kubernetes.client.ApiClient(config))


def terminated(status: dict[str, Any], index: int = 0) -> dict[str, Any]:
    found: dict[str, Any] = status["containerStatuses"][index]["state"]["terminated"]
    return found


def test_a_pod_runs_and_succeeds_with_its_logs_served(site: Site) -> None:
    api = official(site)

    async def body(env: Local) -> None:
        code = "import sys; print('hello'); print('oops', file=sys.stderr); print('bye')"
        await env.create(pod("p", py(code)))
        done = await env.phase("p", "Succeeded", "Failed")
        status = done["status"]
        assert status["phase"] == "Succeeded"
        assert (terminated(status)["exitCode"], terminated(status)["reason"]) == (0, "Completed")
        assert status["podIP"] == "127.0.0.1"
        conditions = {c["type"]: c["status"] for c in status["conditions"]}
        assert conditions == {
            "PodScheduled": "True",
            "Initialized": "True",
            "ContainersReady": "False",
            "Ready": "False",
        }
        read = api.read_namespaced_pod_log
        text = await asyncio.to_thread(read, "p", env.namespace)
        lines = text.splitlines()
        assert sorted(lines) == ["bye", "hello", "oops"], "stdout and stderr, interleaved"
        assert lines.index("hello") < lines.index("bye")
        tail = await asyncio.to_thread(read, "p", env.namespace, tail_lines=1)
        assert tail == lines[-1] + "\n"
        stamped = await asyncio.to_thread(read, "p", env.namespace, timestamps=True)
        assert all(STAMP.match(line) for line in stamped.splitlines())

    run_local(site.server, site.logs, site.root, body)


def test_follow_streams_lines_while_the_container_runs(site: Site, tmp_path: Any) -> None:
    api = official(site)
    gate = tmp_path / "go"

    async def body(env: Local) -> None:
        code = (
            "import os, time\nprint('first', flush=True)\n"
            f"while not os.path.exists({str(gate)!r}): time.sleep(0.02)\nprint('second')"
        )
        await env.create(pod("f", py(code)))
        await env.phase("f", "Running")
        stream = await asyncio.to_thread(
            api.read_namespaced_pod_log, "f", env.namespace, follow=True, _preload_content=False
        )
        chunks = stream.stream(amt=None, decode_content=True)
        first = await asyncio.to_thread(next, chunks)
        assert first == b"first\n", "the first line arrives while the process still runs"
        gate.write_text("")
        rest = await asyncio.to_thread(lambda: b"".join(chunks))
        assert rest == b"second\n", "the stream ends when the container exits"
        await env.phase("f", "Succeeded")

    run_local(site.server, site.logs, site.root, body)


def test_init_containers_run_in_order_before_the_containers(site: Site) -> None:
    def append(text: str, name: str) -> dict[str, Any]:
        code = f"import os; open(os.environ['TRAINOP_ROOT'] + '/work/log', 'a').write({text!r})"
        return py(code, name, volumeMounts=[{"name": "work", "mountPath": "/work"}])

    async def body(env: Local) -> None:
        main = py(
            "import os; print(open(os.environ['TRAINOP_ROOT'] + '/work/log').read())",
            volumeMounts=[{"name": "work", "mountPath": "/work"}],
        )
        manifest = pod(
            "i",
            main,
            initContainers=[append("1", "first"), append("2", "second")],
            volumes=[{"name": "work", "emptyDir": {}}],
        )
        await env.create(manifest)
        status = (await env.phase("i", "Succeeded", "Failed"))["status"]
        assert status["phase"] == "Succeeded"
        inits = status["initContainerStatuses"]
        assert [s["state"]["terminated"]["reason"] for s in inits] == ["Completed", "Completed"]
        text = await asyncio.to_thread(official(site).read_namespaced_pod_log, "i", env.namespace)
        assert text == "12\n"

    run_local(site.server, site.logs, site.root, body)


def test_a_failing_init_container_fails_the_pod_and_nothing_else_runs(site: Site) -> None:
    async def body(env: Local) -> None:
        manifest = pod(
            "bad-init", py("print('never')"), initContainers=[py("raise SystemExit(4)", "init")]
        )
        await env.create(manifest)
        status = (await env.phase("bad-init", "Failed", "Succeeded"))["status"]
        assert status["phase"] == "Failed"
        assert status["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 4
        assert "waiting" in status["containerStatuses"][0]["state"]

    run_local(site.server, site.logs, site.root, body)
