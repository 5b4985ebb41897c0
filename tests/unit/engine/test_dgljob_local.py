"""DGLJob under local ``FrameworkOptions``: what differs from the golden cases, only as data.

Local kubelets project a pod's ConfigMap files once, when it starts (a cluster's kubelet
refreshes them), so the launcher, whose hostfile lists the workers' IPs, is created only once
every worker started with an IP (``ConfigFiles.waits_for``); the Qihoo init containers, whose
images cannot run locally, are gone; ``kubexec.sh`` calls the kubelet's exec client. The
container cluster's options (pod IPs from ``status.podIP``: ``ClusterTopology``) are the case
where the order matters; the process cluster's give the same order with loopback addresses.
"""

from __future__ import annotations

from support import apply_plan, run
from test_dgljob import _moved, created, dgl_job

from trainop.cluster.kubelet.exec import execclient
from trainop.cluster.kubelet.runtimes import containers
from trainop.engine.actions import Update
from trainop.engine.observed import Observed
from trainop.engine.plan import EngineOptions
from trainop.frameworks.options import FrameworkOptions
from trainop.local.session import container_frameworks, local_frameworks

CONTAINERS = EngineOptions(frameworks=container_frameworks(FrameworkOptions()))


def test_the_launcher_waits_until_every_worker_started_with_an_ip() -> None:
    job = dgl_job("pair")
    first = run(job, options=CONTAINERS)
    assert set(created(first, "Pod")) == {"pair-partitioner"}, "no launcher yet"
    assert "pair-config" in created(first, "ConfigMap")
    assert not created(first, "Pod")["pair-partitioner"]["spec"].get("initContainers")
    job, observed = apply_plan(job, Observed(), first)
    observed = _moved(observed, "pair-partitioner", "Succeeded", "10.89.0.3", 0)
    step = run(job, observed, options=CONTAINERS)
    assert set(created(step, "Pod")) == {"pair-worker-0", "pair-worker-1"}
    job, observed = apply_plan(job, observed, step)

    observed = _moved(observed, "pair-worker-0", "Running", "")  # no IP reported yet
    observed = _moved(observed, "pair-worker-1", "Running", "10.89.0.5")
    assert created(run(job, observed, options=CONTAINERS), "Pod") == {}
    observed = _moved(observed, "pair-worker-0", "Running", "10.89.0.4")
    step = run(job, observed, options=CONTAINERS)
    launcher = created(step, "Pod")["pair-launcher"]
    assert not launcher["spec"].get("initContainers")
    files = next(a.body for a in step.actions if isinstance(a, Update))["data"]
    assert files["hostfile"] == (
        "10.89.0.4 30050 pair-worker-0 slots=1\n10.89.0.5 30050 pair-worker-1 slots=1\n"
    ), "final in the pass that creates the launcher (the controller creates pods last)"
    assert files["kubexec.sh"].splitlines()[-1] == (
        f'{containers.exec_command()} ${{POD_NAME}} -- /bin/sh -c "$*"'
    )


def test_a_worker_that_already_succeeded_counts_as_started() -> None:
    """A short worker may finish between two looks of the controller."""
    job = dgl_job("short", workers=1)
    job, observed = apply_plan(job, Observed(), run(job, options=CONTAINERS))
    observed = _moved(observed, "short-partitioner", "Succeeded", "10.89.0.3", 0)
    job, observed = apply_plan(job, observed, run(job, observed, options=CONTAINERS))
    observed = _moved(observed, "short-worker-0", "Succeeded", "10.89.0.4", 0)
    assert set(created(run(job, observed, options=CONTAINERS), "Pod")) == {"short-launcher"}


def test_a_failing_partitioner_fails_the_job_and_creates_neither_workers_nor_launcher() -> None:
    job = dgl_job("broken")
    job, observed = apply_plan(job, Observed(), run(job, options=CONTAINERS))
    observed = _moved(observed, "broken-partitioner", "Failed", "10.89.0.3", 1)
    result = run(job, observed, options=CONTAINERS)
    assert any(c.type == "Failed" and c.status == "True" for c in result.status.conditions or ())
    assert created(result, "Pod") == {}


def test_the_process_clusters_kubexec_calls_the_kubelets_exec_client() -> None:
    local = EngineOptions(frameworks=local_frameworks(FrameworkOptions()))
    files = created(run(dgl_job("local", workers=1), options=local), "ConfigMap")["local-config"]
    assert files["data"]["kubexec.sh"].splitlines()[-1] == (
        f'{execclient.shell_command()} ${{POD_NAME}} -- /bin/sh -c "$*"'
    )


def test_on_a_cluster_the_launcher_starts_with_the_partitioner() -> None:
    """Pods see file updates there: the golden order (G1), with the watchers' init containers."""
    pods = created(run(dgl_job("cluster")), "Pod")
    assert set(pods) == {"cluster-launcher", "cluster-partitioner"}
    assert len(pods["cluster-launcher"]["spec"]["initContainers"]) == 3
