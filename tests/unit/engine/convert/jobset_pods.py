"""A JobSet's pods as JobSet and the Job controller would create them, and what each pod's
main process sees: its environment after the kubelet and after any shell prologue.

Expansion (jobset-and-indexed-job-spec §2.3, §2.6, §3.3): for each replicatedJob ``rj`` and
each job index ``ji < replicas``, Job ``<js>-<rj>-<ji>``; for each completion index
``pi < completions``, a pod with hostname ``<js>-<rj>-<ji>-<pi>``, subdomain
``network.subdomain`` or the JobSet's name, the completion index as label and annotation, and
``JOB_COMPLETION_INDEX`` (a fieldRef to that label) appended to every container lacking it.

``process_env`` resolves a container's env as the kubelet does
(``cluster.kubelet.environment``) and, when the container runs ``/bin/sh -c SCRIPT``, runs the
real shell with the script, stubbing the programs it ``exec``s by a recorder of the
environment, so the values the prologue computes are the ones a process would read.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainop.cluster.kubelet import environment

INDEX_KEY = "batch.kubernetes.io/job-completion-index"
Wire = dict[str, Any]


@dataclass(frozen=True)
class Pod:
    replicated_job: str
    job_index: int
    index: int
    body: Wire

    @property
    def fqdn(self) -> str:
        spec = self.body["spec"]
        return f"{spec['hostname']}.{spec['subdomain']}"


def expand(jobset: Wire) -> list[Pod]:
    """Every pod of ``jobset`` (a JobSet object), in replicatedJob order."""
    name = jobset["metadata"]["name"]
    spec = jobset["spec"]
    subdomain = (spec.get("network") or {}).get("subdomain") or name
    pods = []
    for rj in spec["replicatedJobs"]:
        job_spec = rj["template"]["spec"]
        assert job_spec.get("completionMode") == "Indexed"
        for ji in range(rj.get("replicas", 1)):
            for pi in range(job_spec.get("completions", job_spec.get("parallelism", 1))):
                pods.append(
                    Pod(rj["name"], ji, pi, _pod(name, rj["name"], ji, pi, job_spec, subdomain))
                )
    return pods


def _pod(js: str, rj: str, ji: int, pi: int, job_spec: Wire, subdomain: str) -> Wire:
    template = copy.deepcopy(job_spec["template"])
    meta = template.setdefault("metadata", {})
    meta.setdefault("labels", {})[INDEX_KEY] = str(pi)
    meta.setdefault("annotations", {})[INDEX_KEY] = str(pi)
    meta["name"] = f"{js}-{rj}-{ji}-{pi}-abcde"
    spec = template["spec"]
    spec["hostname"] = f"{js}-{rj}-{ji}-{pi}"
    spec["subdomain"] = subdomain
    ref = {"fieldRef": {"fieldPath": f"metadata.labels['{INDEX_KEY}']"}}
    for container in [*spec.get("initContainers", []), *spec["containers"]]:
        env = container.setdefault("env", [])
        if all(e["name"] != "JOB_COMPLETION_INDEX" for e in env):
            env.append({"name": "JOB_COMPLETION_INDEX", "valueFrom": ref})
    return template


def process_env(pod: Pod, container: Wire, tmp: Path) -> dict[str, str]:
    """The environment the container's main process starts with."""
    node = environment.Node(
        name="node", host_ip="10.0.0.1", cpus=4, memory_bytes=2**33, pod_ip="10.1.0.7"
    )
    env = environment.resolve(pod.body, container, environment.Sources(), node)
    argv = environment.argv(container, env)
    if argv[:2] != ["/bin/sh", "-c"]:
        return env
    stubs = tmp / "bin"
    stubs.mkdir(exist_ok=True)
    out = tmp / "env.json"
    dump = f"json.dump(dict(os.environ), open({str(out)!r}, 'w'))"
    recorder = f"#!{sys.executable}\nimport json, os\n{dump}\n"
    for program in ("python3", "python", "mpirun", "torchrun", "sleep"):
        path = stubs / program
        path.write_text(recorder)
        path.chmod(0o755)
    run_env = {**env, "PATH": f"{stubs}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
    subprocess.run(argv, env=run_env, cwd=tmp, check=True, timeout=30)
    found: dict[str, str] = json.loads(out.read_text())
    return {k: v for k, v in found.items() if k != "PATH"}
