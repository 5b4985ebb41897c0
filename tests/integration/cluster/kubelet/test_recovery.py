"""A kubelet taking over pods an earlier kubelet ran (issue 10 item 5).

The earlier kubelet's death is reproduced as it leaves things after a kill -9: the pod's last
written status says its container runs, and the sandbox's run record says the run started and
never ended (or that it ended). The new kubelet must report a lost container as kubelet does
(``ContainerStatusUnknown``, 137, restartCount + 1) and let the restart policy decide, and must
never run again a container that ended with 0. Markers count the runs.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from tests.integration.cluster.kubelet.conftest import Site
from tests.integration.cluster.kubelet.harness import DEADLINE, Local, pod, py
from trainop.cluster.kubelet import Backoff, Kubelet, KubeletConfig, recovery
from trainop.cluster.kubelet.sandbox import Sandbox
from trainop.cluster.kubelet.status.render import Termination
from trainop.kube.client import Obj
from trainop.kube.http import HttpClient
from trainop.kube.resources import NAMESPACES, PODS

STARTED = "2026-01-01T00:00:00Z"


def marked(marker: Path) -> dict[str, Any]:
    return py(f"open({str(marker)!r}, 'a').write('ran\\n')")


def running_status(restart_count: int = 0) -> Obj:
    return {
        "phase": "Running",
        "containerStatuses": [
            {
                "name": "main",
                "image": "python:3",
                "imageID": "",
                "containerID": "process://x/main/0",
                "ready": True,
                "restartCount": restart_count,
                "state": {"running": {"startedAt": STARTED}},
            }
        ],
    }


def runs(marker: Path) -> int:
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def test_lost_containers_are_reported_and_the_policy_decides(site: Site, tmp_path: Path) -> None:
    markers = {n: tmp_path / n for n in ("never", "onfailure", "done", "statusonly")}

    async def main() -> None:
        client = HttpClient.from_kubeconfig(path=str(site.server.kubeconfig))
        namespace = f"r-{uuid.uuid4().hex[:8]}"
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        policies = {"never": "Never", "onfailure": "OnFailure", "done": "OnFailure"}
        policies["statusonly"] = "Never"
        for name, policy in policies.items():
            created = await client.create(
                PODS, pod(name, marked(markers[name]), restart_policy=policy), namespace=namespace
            )
            await client.patch(
                PODS,
                name=name,
                namespace=namespace,
                patch={"status": running_status()},
                subresource="status",
            )
            box = Sandbox.of(site.root, namespace, name, created["metadata"]["uid"])
            if name in ("never", "onfailure"):  # started, never ended: lost with the kubelet
                recovery.write_started(box.record("main"), 0, STARTED)
            elif name == "done":  # ended with 0 before the status said so
                ended = Termination(0, "Completed", STARTED, STARTED)
                recovery.write_ended(box.record("main"), 0, ended)

        config = KubeletConfig(
            root=site.root, backoff=Backoff(initial=0.05, maximum=0.2), gpus=(), shutdown_grace=1
        )
        kubelet = Kubelet(client=client, config=config, namespace=namespace, logs=site.logs)
        task = asyncio.create_task(kubelet.run())
        try:
            env = Local(client, kubelet, namespace, site.root)
            for name in ("never", "statusonly"):
                status = (await env.phase(name, "Failed", "Succeeded"))["status"]
                assert status["phase"] == "Failed", name
                entry = status["containerStatuses"][0]
                found = entry["state"]["terminated"]
                assert (found["reason"], found["exitCode"]) == ("ContainerStatusUnknown", 137)
                assert found["message"] == recovery.LOST_MESSAGE
                assert entry["restartCount"] == 1, name
                assert status["reason"] == "ContainerStatusUnknown"
                assert status["message"] == f"container main: {recovery.LOST_MESSAGE}"
                assert runs(markers[name]) == 0, f"{name}: a Never container ran again"

            status = (await env.phase("onfailure", "Failed", "Succeeded"))["status"]
            assert status["phase"] == "Succeeded"
            entry = status["containerStatuses"][0]
            assert entry["restartCount"] == 1
            last = entry["lastState"]["terminated"]
            assert (last["reason"], last["exitCode"]) == ("ContainerStatusUnknown", 137)
            assert runs(markers["onfailure"]) == 1

            status = (await env.phase("done", "Failed", "Succeeded"))["status"]
            assert status["phase"] == "Succeeded"
            assert status["containerStatuses"][0]["restartCount"] == 0
            assert runs(markers["done"]) == 0, "a container that ended with 0 ran again"
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await client.close()

    asyncio.run(asyncio.wait_for(main(), DEADLINE * 2))
