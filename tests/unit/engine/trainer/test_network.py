"""The planner's pod network (note 133): every env value that names the rank-0 pod comes from
the ``PodNetwork`` argument; the default is upstream's addressing, unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.unit.engine.trainer.builders import (
    NOW,
    applied,
    env_by_name,
    keys,
    main_container,
    runtime,
    trainjob,
    wrapper_jobs,
)
from tests.unit.engine.trainer.test_golden_g4_g5_mpi import OMPI, g4_runtime, g4_trainjob

from trainop.engine.convert import convert
from trainop.engine.trainer.network import PodNetwork, endpoints_used
from trainop.engine.trainer.plan import Observed, plan

ROOT = Path(__file__).resolve().parents[4]
LOOPBACK = PodNetwork(address="127.0.0.1", ports={"alpha-node-0-0": 21001})


def node_env(policy: dict[str, Any], network: PodNetwork | None = None) -> dict[str, Any]:
    rt = runtime("alpha", wrapper_jobs(), ml_policy={"numNodes": 2, **policy})
    tj = trainjob("alpha", "alpha", trainer={"numNodes": 2, "command": ["train"]})
    extra = {} if network is None else {"network": network}
    result = plan(tj, rt, observed=Observed(), now=NOW, new_ssh_keys=keys, **extra)
    return env_by_name(main_container(applied(result, "JobSet"), "node"))


def test_the_default_is_upstreams_dns_name_and_port() -> None:
    env = node_env({"torch": {}})
    assert (env["PET_MASTER_ADDR"], env["PET_MASTER_PORT"]) == ("alpha-node-0-0.alpha", "29500")


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ({"torch": {}}, {"PET_MASTER_ADDR": "127.0.0.1", "PET_MASTER_PORT": "21001"}),
        ({"jax": {}}, {"JAX_COORDINATOR_ADDRESS": "127.0.0.1:21001"}),
        ({"xgboost": {}}, {"DMLC_TRACKER_URI": "127.0.0.1", "DMLC_TRACKER_PORT": "21001"}),
    ],
)
def test_a_loopback_network_gives_its_address_and_the_endpoints_port(
    policy: dict[str, Any], expected: dict[str, str]
) -> None:
    env = node_env(policy, LOOPBACK)
    assert {k: env[k] for k in expected} == expected


def test_an_endpoint_without_a_port_keeps_the_plugins_port() -> None:
    env = node_env({"torch": {}}, PodNetwork(address="127.0.0.1"))
    assert (env["PET_MASTER_ADDR"], env["PET_MASTER_PORT"]) == ("127.0.0.1", "29500")


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ({"torch": {}}, ["alpha-node-0-0"]),
        ({"jax": {}}, ["alpha-node-0-0"]),
        ({"xgboost": {}}, ["alpha-node-0-0"]),
        ({"mpi": {}}, []),
        ({}, []),
    ],
)
def test_endpoints_used_are_those_a_plugin_addresses(
    policy: dict[str, Any], expected: list[str]
) -> None:
    rt = runtime("alpha", wrapper_jobs(), ml_policy={"numNodes": 1, **policy})
    assert endpoints_used(trainjob("alpha", "alpha"), rt) == expected


def test_an_mpi_launcher_gets_the_networks_launcher_env_and_the_hostfile_keeps_names() -> None:
    shell = (("OMPI_MCA_plm_rsh_agent", "/state/bin/ssh"), ("OMPI_MCA_btl_tcp_if_include", "lo"))
    network = PodNetwork(address="127.0.0.1", launcher_env=shell)
    result = plan(
        g4_trainjob(), g4_runtime(8), observed=Observed(), now=NOW, new_ssh_keys=keys,
        network=network,
    )  # fmt: skip
    launcher = env_by_name(main_container(applied(result, "JobSet"), "launcher"))
    assert launcher == {**OMPI, **dict(shell)}
    hostfile = next(o for o in result.apply if o["metadata"]["name"] == "alpha-mpi-hostfile")
    assert hostfile["data"]["hostfile"].startswith("alpha-node-0-0.alpha slots=8\n")


def _converted_ddp_env(network: PodNetwork | None) -> dict[str, dict[str, Any]]:
    source = ROOT / "examples" / "pytorch" / "ddp.yaml"
    conversion = convert(yaml.safe_load(source.read_text()))
    tj = {**conversion.trainjob}
    tj["metadata"] = {"namespace": "default", "uid": "u", **tj["metadata"]}
    extra = {} if network is None else {"network": network}
    result = plan(tj, conversion.runtime, observed=Observed(), now=NOW, new_ssh_keys=keys, **extra)
    jobset = applied(result, "JobSet")
    return {rj: env_by_name(main_container(jobset, rj, "pytorch")) for rj in ("master", "worker")}


def test_env_naming_one_of_the_jobsets_pods_is_its_address_under_a_loopback_network() -> None:
    """``trainop convert`` writes v1's MASTER_ADDR as the rank-0 pod's DNS name: under a
    process session it becomes loopback; on a cluster it stays the name; the port stays v1's."""
    on_cluster = _converted_ddp_env(None)
    local = _converted_ddp_env(PodNetwork(address="127.0.0.1"))
    for rj in ("master", "worker"):
        assert on_cluster[rj]["MASTER_ADDR"] == "pytorch-ddp-master-0-0.pytorch-ddp"
        assert local[rj]["MASTER_ADDR"] == "127.0.0.1"
        assert local[rj]["PET_MASTER_ADDR"] == "127.0.0.1"
        assert local[rj]["MASTER_PORT"] == on_cluster[rj]["MASTER_PORT"] == "23456"
        assert local[rj]["WORLD_SIZE"] == "3"
