"""MPIJob under local ``FrameworkOptions``: the plugin differs from the golden only as data.

The process cluster's options (``local.session.local_frameworks``) must change exactly what
note 060 lists for MPI — the launcher's paths under ``$(TRAINOP_ROOT)``, Open MPI's loopback
settings, ``kubexec.sh`` calling the kubelet's exec client, no kubectl delivery — and nothing
else (names, hostfile, RBAC, workers).
"""

from __future__ import annotations

import copy
from typing import Any

from support import CANONICAL, make_job, run

from trainop.cluster.kubelet.exec import execclient
from trainop.engine.actions import Create
from trainop.engine.plan import EngineOptions
from trainop.frameworks.options import FrameworkOptions
from trainop.local.session import local_frameworks

LOCAL = EngineOptions(frameworks=local_frameworks(FrameworkOptions()))


def _created(options: EngineOptions, job: Any = CANONICAL["MPIJob"]) -> dict[str, dict[str, Any]]:
    result = run(job, options=options)
    return {
        f"{a.kind}/{a.body['metadata']['name']}": a.body
        for a in result.actions
        if isinstance(a, Create)
    }


def test_local_options_change_only_the_launchers_paths_exec_command_and_delivery() -> None:
    cluster, local = _created(EngineOptions()), _created(LOCAL)
    assert cluster.keys() == local.keys()
    root = "$(TRAINOP_ROOT)/etc/mpi"
    launcher = local["Pod/job-launcher"]
    env = {e["name"]: e.get("value") for e in launcher["spec"]["containers"][0]["env"]}
    assert env == {
        "OMPI_MCA_plm_rsh_agent": f"{root}/kubexec.sh",
        "OMPI_MCA_orte_default_hostfile": f"{root}/hostfile",
        "NVIDIA_VISIBLE_DEVICES": "",
        "NVIDIA_DRIVER_CAPABILITIES": "",
        "I_MPI_HYDRA_BOOTSTRAP": "rsh",
        "I_MPI_HYDRA_BOOTSTRAP_EXEC": f"{root}/kubexec.sh",
        "OMPI_MCA_oob_tcp_if_include": "lo",
        "OMPI_MCA_btl_tcp_if_include": "lo",
    }
    assert "initContainers" not in launcher["spec"]
    assert [v["name"] for v in launcher["spec"]["volumes"]] == ["mpi-job-config"]
    mounts = launcher["spec"]["containers"][0]["volumeMounts"]
    assert mounts == [{"name": "mpi-job-config", "mountPath": "/etc/mpi"}]
    script = local["ConfigMap/job-config"]["data"]["kubexec.sh"]
    assert script.splitlines()[-1] == (
        f'{execclient.shell_command()} ${{POD_NAME}} -- /bin/sh -c "$*"'
    )
    assert cluster["ConfigMap/job-config"]["data"]["kubexec.sh"].splitlines()[-1] == (
        '/opt/kube/kubectl exec ${POD_NAME} -- /bin/sh -c "$*"'
    )
    for name in set(cluster) - {"Pod/job-launcher", "ConfigMap/job-config"}:
        assert local[name] == cluster[name], name
    expected = copy.deepcopy(cluster["ConfigMap/job-config"])
    expected["data"]["kubexec.sh"] = script
    assert local["ConfigMap/job-config"] == expected


def test_a_variable_the_user_sets_on_the_launcher_is_not_overridden() -> None:
    job = make_job("MPIJob", {"Launcher": 1, "Worker": 1}, spec={"mainContainer": "mpi"})
    template = job.spec.replica_specs["Launcher"].template
    template["spec"]["containers"][0]["env"] = [
        {"name": "OMPI_MCA_btl_tcp_if_include", "value": "eth0"}
    ]
    created = _created(LOCAL, job)
    env = created["Pod/job-launcher"]["spec"]["containers"][0]["env"]
    assert [e["value"] for e in env if e["name"] == "OMPI_MCA_btl_tcp_if_include"] == ["eth0"]
    script = created["ConfigMap/job-config"]["data"]["kubexec.sh"]
    assert " ${POD_NAME} --container mpi -- " in script
