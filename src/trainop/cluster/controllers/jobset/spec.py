"""Reading a JobSet as the controller sees it: every field with its default when absent.

The API server applies JobSet's webhook defaults at admission, but a JobSet stored without
them (another server, an old object) must not crash a pass (spec 2.17): ``network`` absent
means DNS hostnames on and not-ready addresses published, ``successPolicy`` absent means
``All``, ``replicas`` absent means 1. Pure; values in, values out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Raw = Mapping[str, Any]


def as_map(value: object) -> Raw:
    """``value`` when it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def as_list(value: object) -> list[Raw]:
    """The mappings of a list (anything else: none)."""
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def as_int(value: object, default: int = 0) -> int:
    """An integer field (a bool or anything else: ``default``)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


@dataclass(frozen=True, slots=True)
class ReplicatedJob:
    """One ``spec.replicatedJobs[]`` entry, with its defaults."""

    name: str
    group: str
    replicas: int
    template: Raw  # the batch/v1 JobTemplateSpec
    depends_on: tuple[tuple[str, str], ...]  # (replicatedJob, Ready|Complete)


def spec_of(jobset: Raw) -> Raw:
    return as_map(jobset.get("spec"))


def replicated_jobs(jobset: Raw) -> list[ReplicatedJob]:
    """The replicatedJobs in spec order."""
    found = []
    for rj in as_list(spec_of(jobset).get("replicatedJobs")):
        depends = tuple(
            (str(d.get("name") or ""), str(d.get("status") or ""))
            for d in as_list(rj.get("dependsOn"))
        )
        found.append(
            ReplicatedJob(
                name=str(rj.get("name") or ""),
                group=str(rj.get("groupName") or "default"),
                replicas=as_int(rj.get("replicas"), 1),
                template=as_map(rj.get("template")),
                depends_on=depends,
            )
        )
    return found


def name_of(obj: Raw) -> str:
    return str(as_map(obj.get("metadata")).get("name") or "")


def namespace_of(obj: Raw) -> str:
    return str(as_map(obj.get("metadata")).get("namespace") or "")


def is_suspended(jobset: Raw) -> bool:
    return spec_of(jobset).get("suspend") is True


def dns_hostnames(jobset: Raw) -> bool:
    """Whether pods get hostnames through the headless Service (nil network: yes)."""
    network = spec_of(jobset).get("network")
    return network is None or as_map(network).get("enableDNSHostnames") is not False


def publish_not_ready(jobset: Raw) -> bool:
    return as_map(spec_of(jobset).get("network")).get("publishNotReadyAddresses") is not False


def subdomain(jobset: Raw) -> str:
    """The pods' subdomain and the Service's name: ``network.subdomain``, else the JobSet's."""
    return str(as_map(spec_of(jobset).get("network")).get("subdomain") or name_of(jobset))


def in_order(jobset: Raw) -> bool:
    policy = as_map(spec_of(jobset).get("startupPolicy"))
    return policy.get("startupPolicyOrder") == "InOrder"


def failure_policy(jobset: Raw) -> Raw | None:
    policy = spec_of(jobset).get("failurePolicy")
    return as_map(policy) if policy is not None else None


def status_of(jobset: Raw) -> Raw:
    return as_map(jobset.get("status"))


def restarts(jobset: Raw) -> int:
    return as_int(status_of(jobset).get("restarts"))
