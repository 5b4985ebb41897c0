"""kube-apiserver's rules as kubectl meets them under ``trainop local up``: an integer field the
Go types cannot hold, what ``kubectl patch`` may change in a pod, a Service's cluster IP,
``delete --grace-period`` (the deletion moment, the kubelet's SIGKILL then, a shorter second
grace period), and the Warning of a server-side dry run (note 010)."""

from __future__ import annotations

import ipaddress
import json
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.integration.kubectl.conftest import STUBBORN, Kubectl, started, write


def _stubborn(kubectl: Kubectl, ns: str, tmp_path: Path, name: str) -> None:
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, STUBBORN.format(name=name), name))
    started(kubectl, ns, name)


def test_delete_grace_period_sets_the_moment_the_kubelet_kills(
    kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    _stubborn(kubectl, ns, tmp_path, "slow")
    asked = datetime.now(UTC).replace(microsecond=0)
    began = time.monotonic()
    kubectl.run("delete", "pod", "slow", "-n", ns, "--grace-period=7", "--wait=false")
    shown = kubectl.out(
        "get",
        "pod",
        "slow",
        "-n",
        ns,
        "-o",
        "jsonpath={.metadata.deletionTimestamp} {.metadata.deletionGracePeriodSeconds}",
    )
    stamp, grace = shown.split()
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    assert grace == "7"
    assert asked + timedelta(seconds=7) <= moment <= datetime.now(UTC) + timedelta(seconds=7)
    kubectl.run("wait", "--for=delete", "pod/slow", "-n", ns, "--timeout=60s")
    assert time.monotonic() - began >= 6.5  # SIGTERM is ignored: SIGKILL when the period ends


def test_a_shorter_second_grace_period_kills_sooner(
    kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    _stubborn(kubectl, ns, tmp_path, "long")
    kubectl.run("delete", "pod", "long", "-n", ns, "--grace-period=60", "--wait=false")
    began = time.monotonic()
    kubectl.run("delete", "pod", "long", "-n", ns, "--grace-period=1", "--wait=false")
    kubectl.run("wait", "--for=delete", "pod/long", "-n", ns, "--timeout=50s")
    assert time.monotonic() - began < 30  # not the first request's 60 s


def test_patching_a_pods_command_is_refused(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    _stubborn(kubectl, ns, tmp_path, "p")
    patch = json.dumps({"spec": {"containers": [{"name": "main", "command": ["sleep", "1"]}]}})
    done = kubectl.run("patch", "pod", "p", "-n", ns, "-p", patch, check=False)
    assert done.returncode == 1
    assert (
        'The Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than '
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
        "`spec.tolerations` (only additions to existing tolerations),"
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
        "negative)"
    ) in done.stderr
    kubectl.run("set", "image", "pod/p", "-n", ns, "main=python:3.12")
    image = kubectl.out("get", "pod", "p", "-n", ns, "-o", "jsonpath={.spec.containers[0].image}")
    assert image == "python:3.12"
    kubectl.run("delete", "pod", "p", "-n", ns, "--grace-period=0", "--force")


def test_an_out_of_range_integer_is_refused(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "huge"},
        "spec": {
            "terminationGracePeriodSeconds": 12345,
            "containers": [{"name": "main", "image": "python:3.11", "command": ["true"]}],
        },
    }
    text = json.dumps(pod).replace("12345", "1e300")
    done = kubectl.run("create", "-n", ns, "-f", write(tmp_path, text, "huge.json"), check=False)
    assert done.returncode == 1
    assert (
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal number 1e+300 '
        "into Go struct field PodSpec.spec.terminationGracePeriodSeconds of type int64"
    ) in done.stderr


SERVICE = """
apiVersion: v1
kind: Service
metadata:
  name: {name}
spec:
  selector:
    app: x
  ports:
    - port: 80
{extra}
"""


def test_a_service_gets_a_cluster_ip(kubectl: Kubectl, ns: str, tmp_path: Path) -> None:
    kubectl.run("apply", "-n", ns, "-f", write(tmp_path, SERVICE.format(name="s", extra=""), "s"))
    ip = kubectl.out("get", "service", "s", "-n", ns, "-o", "jsonpath={.spec.clusterIP}")
    assert ipaddress.IPv4Address(ip) in ipaddress.IPv4Network("10.96.0.0/12")
    assert ip in kubectl.out("get", "service", "s", "-n", ns)  # the CLUSTER-IP column
    outside = SERVICE.format(name="o", extra="  clusterIP: 10.0.0.5")
    done = kubectl.run("apply", "-n", ns, "-f", write(tmp_path, outside, "o"), check=False)
    assert done.returncode == 1
    assert (
        'Service "o" is invalid: spec.clusterIPs: Invalid value: []string{"10.0.0.5"}: failed to '
        "allocate IP 10.0.0.5: the provided IP (10.0.0.5) is not in the valid range. The range "
        "of valid IPs is 10.96.0.0/12"
    ) in done.stderr


def test_a_server_dry_run_warns_as_the_write_would(
    kubectl: Kubectl, ns: str, tmp_path: Path
) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "typo"}, "dataa": {}}
    path = write(tmp_path, json.dumps(config), "cm.json")
    done = kubectl.run("apply", "--dry-run=server", "--validate=warn", "-n", ns, "-f", path)
    assert 'Warning: unknown field "dataa"' in done.stderr
    assert "(server dry run)" in done.stdout
    gone = kubectl.run("get", "configmap", "typo", "-n", ns, check=False)
    assert gone.returncode == 1
