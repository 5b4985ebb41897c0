"""Env resolution, volumes at their mapped paths, working directory, sandbox variables."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.integration.cluster.kubelet.conftest import Site
from tests.integration.cluster.kubelet.harness import Local, pod, py, run_local
from trainop.kube.resources import CONFIGMAPS, SECRETS

DUMP_ENV = (
    "import json, os, sys\n"
    "print(json.dumps({**os.environ, 'ARGV': sys.argv[1:], 'CWD': os.getcwd()}))"
)


async def setup_sources(env: Local) -> None:
    await env.create(
        {"metadata": {"name": "cm"}, "data": {"color": "blue", "size": "L"}},
        CONFIGMAPS,
    )
    secret = {
        "token": base64.b64encode(b"s3cret").decode(),
        "user": base64.b64encode(b"u").decode(),
        "1st": base64.b64encode(b"x").decode(),  # a valid key, not a valid variable name
    }
    await env.create({"metadata": {"name": "sec"}, "type": "Opaque", "data": secret}, SECRETS)


async def output_of(site: Site, env: Local, name: str) -> str:
    from tests.integration.cluster.kubelet.test_running import official

    return str(await asyncio.to_thread(official(site).read_namespaced_pod_log, name, env.namespace))


def test_every_env_source_resolves(site: Site) -> None:
    env_vars: list[dict[str, Any]] = [
        {"name": "PLAIN", "value": "v"},
        {"name": "EXPANDED", "value": "$(PLAIN)-$(COLOR)-$(UNDEFINED)-$$(PLAIN)"},
        {"name": "UNDER_ROOT", "value": "$(TRAINOP_ROOT)/etc/mpi"},  # the kubelet's own
        {"name": "COLOR", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "color"}}},
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "token"}}},
        {
            "name": "OPT_KEY",
            "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "no", "optional": True}},
        },
        {
            "name": "OPT_SECRET",
            "valueFrom": {"secretKeyRef": {"name": "nope", "key": "k", "optional": True}},
        },
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
        {"name": "LABEL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
        {"name": "NOTE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['note']"}}},
        {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
        {
            "name": "CPU_LIMIT",
            "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}},
        },
        {
            "name": "MEM_MI",
            "valueFrom": {"resourceFieldRef": {"resource": "requests.memory", "divisor": "1Mi"}},
        },
    ]
    container = py(
        DUMP_ENV,
        env=env_vars,
        envFrom=[
            {"configMapRef": {"name": "cm"}, "prefix": "CM_"},
            {"secretRef": {"name": "sec"}},
            {"configMapRef": {"name": "absent", "optional": True}},
        ],
        args=["$(PLAIN)", "$(POD_NAME)", "$$(PLAIN)", "$(NOPE)"],
        resources={"limits": {"cpu": "1500m", "memory": "256Mi"}},
        workingDir="/app/src",
    )
    manifest = pod("envs", container)
    manifest["metadata"].update(labels={"app": "demo"}, annotations={"note": "hi"})

    async def body(env: Local) -> None:
        await setup_sources(env)
        created = await env.create(manifest)
        status = (await env.phase("envs", "Succeeded", "Failed"))["status"]
        assert status["phase"] == "Succeeded", status
        seen = json.loads(await output_of(site, env, "envs"))
        sandbox = Path(seen["TRAINOP_SANDBOX"])
        expected = {
            "PLAIN": "v",
            "EXPANDED": "v-$(COLOR)-$(UNDEFINED)-$(PLAIN)",  # only earlier variables expand
            "UNDER_ROOT": str(sandbox / "fs" / "main" / "etc" / "mpi"),
            "TRAINOP_NAMESPACE": env.namespace,
            "COLOR": "blue",
            "TOKEN": "s3cret",
            "POD_NAME": "envs",
            "POD_NS": env.namespace,
            "POD_UID": created["metadata"]["uid"],
            "LABEL": "demo",
            "NOTE": "hi",
            "NODE": "trainop-local",
            "SA": "default",
            "POD_IP": "127.0.0.1",
            "HOST_IP": "127.0.0.1",
            "CPU_LIMIT": "1500",
            "MEM_MI": "256",  # requests default to limits
            "CM_color": "blue",
            "CM_size": "L",
            "token": "s3cret",
            "user": "u",
            "HOSTNAME": "envs",
            "HOME": str(sandbox / "home"),
            "TMPDIR": str(sandbox / "tmp"),
            "TRAINOP_ROOT": str(sandbox / "fs" / "main"),
            "ARGV": ["v", "envs", "$(PLAIN)", "$(NOPE)"],
            "CWD": str(sandbox / "fs" / "main" / "app" / "src"),
        }
        assert {k: seen.get(k) for k in expected} == expected
        for absent in ("OPT_KEY", "OPT_SECRET", "1st", "CUDA_VISIBLE_DEVICES"):
            assert absent not in seen
        assert seen["TRAINOP_EXEC_ADDRESS"].startswith("@trainop-kubelet-")
        path = seen["PATH"].split(os.pathsep)
        interpreter_bin = str(Path(sys.executable).parent)
        assert path[0] == str(sandbox / "pyenv" / "bin"), "the pod's Python overlay comes first"
        assert seen["PIP_PYTHON"] == str(sandbox / "pyenv" / "bin" / "python")
        assert path[1] == interpreter_bin, "then the interpreter trainop runs on"
        host = [d for d in os.environ["PATH"].split(os.pathsep) if d and d != interpreter_bin]
        assert path[2:] == host, "then the host PATH"

    run_local(site.server, site.logs, site.root, body)


def test_volumes_are_materialised_at_their_mapped_paths(site: Site, tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "data.txt").write_text("from the host")
    code = (
        "import json, os, stat\n"
        "root = os.environ['TRAINOP_ROOT']\n"
        "def read(p): return open(root + p).read()\n"
        "mode = stat.S_IMODE(os.stat(root + '/etc/secret/token').st_mode)\n"
        "open(root + '/scratch/out', 'w').write('x')\n"
        "print(json.dumps({'color': read('/etc/config/color'),"
        " 'renamed': read('/etc/items/sub/c.txt'),"
        " 'token': read('/etc/secret/token'), 'mode': oct(mode), 'host': read('/host/data.txt'),"
        " 'scratch': os.listdir(os.environ['TRAINOP_VOLUME_SCRATCH_DIR']),"
        " 'items': sorted(os.listdir(root + '/etc/items'))}))"
    )
    mounts = [
        {"name": "config", "mountPath": "/etc/config"},
        {"name": "items", "mountPath": "/etc/items"},
        {"name": "secret", "mountPath": "/etc/secret", "readOnly": True},
        {"name": "host", "mountPath": "/host"},
        {"name": "scratch-dir", "mountPath": "/scratch"},
    ]
    volumes = [
        {"name": "config", "configMap": {"name": "cm"}},
        {
            "name": "items",
            "configMap": {"name": "cm", "items": [{"key": "color", "path": "sub/c.txt"}]},
        },
        {"name": "secret", "secret": {"secretName": "sec", "defaultMode": 0o400}},
        {"name": "host", "hostPath": {"path": str(host), "type": "Directory"}},
        {"name": "scratch-dir", "emptyDir": {"medium": "Memory"}},
    ]

    async def body(env: Local) -> None:
        await setup_sources(env)
        await env.create(pod("vols", py(code, volumeMounts=mounts), volumes=volumes))
        status = (await env.phase("vols", "Succeeded", "Failed"))["status"]
        assert status["phase"] == "Succeeded", status
        seen = json.loads(await output_of(site, env, "vols"))
        assert seen == {
            "color": "blue",
            "renamed": "blue",
            "token": "s3cret",
            "mode": "0o400",
            "host": "from the host",
            "scratch": ["out"],
            "items": ["sub"],
        }

    run_local(site.server, site.logs, site.root, body)


def test_gpus_are_assigned_through_cuda_visible_devices(site: Site) -> None:
    show = "import os; print(repr(os.environ.get('CUDA_VISIBLE_DEVICES')))"

    def wants(count: int) -> dict[str, Any]:
        return {"limits": {"nvidia.com/gpu": str(count)}}

    async def body(env: Local) -> None:
        await env.create(pod("two", py(show, resources=wants(2))))
        await env.create(pod("none", py(show)))
        await env.create(pod("greedy", py(show, resources=wants(3))))
        for name, expected in (("two", "'0,1'"), ("none", "''")):
            status = (await env.phase(name, "Succeeded", "Failed"))["status"]
            assert status["phase"] == "Succeeded"
            assert (await output_of(site, env, name)).strip() == expected
        greedy = (await env.phase("greedy", "Failed", "Succeeded"))["status"]
        assert greedy["reason"] == "UnexpectedAdmissionError"
        assert "requested 3 nvidia.com/gpu, this machine has 2" in greedy["message"]

    run_local(site.server, site.logs, site.root, body, gpus=("0", "1"))


def test_without_gpus_a_gpu_request_runs_on_the_cpu(site: Site) -> None:
    """A machine without GPUs ignores the request (it used to wait forever for a device)."""
    show = "import os; print(repr(os.environ.get('CUDA_VISIBLE_DEVICES')))"

    async def body(env: Local) -> None:
        await env.create(pod("cpu", py(show, resources={"limits": {"nvidia.com/gpu": "1"}})))
        status = (await env.phase("cpu", "Succeeded", "Failed"))["status"]
        assert status["phase"] == "Succeeded", status
        assert (await output_of(site, env, "cpu")).strip() == "None"

    run_local(site.server, site.logs, site.root, body)  # gpus=(): none on this machine
