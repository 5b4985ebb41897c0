"""Support for tests that run ``trainop operator`` as a real process against the embedded
API server: CRD installation, free ports, process start/stop (polling is ``tests.polling``)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

ROOT = Path(__file__).resolve().parents[3]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def api_client(kubeconfig: Path) -> k8s.ApiClient:
    return k8s_config.new_client_from_config(config_file=str(kubeconfig))


def install_crds(api: k8s.ApiClient) -> None:
    extensions = k8s.ApiextensionsV1Api(api)
    existing = {c.metadata.name for c in extensions.list_custom_resource_definition().items}
    for path in sorted((ROOT / "manifests/crds").glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        if (
            crd.get("kind") == "CustomResourceDefinition"
            and crd["metadata"]["name"] not in existing
        ):
            extensions.create_custom_resource_definition(crd)


class OperatorProcess:
    """``trainop operator`` in a subprocess with its own metrics and probe ports."""

    def __init__(
        self, kubeconfig: Path, *args: str, log: Path, webhook_cert_dir: Path | None = None
    ) -> None:
        self.metrics_port, self.health_port = free_port(), free_port()
        self.webhook_port = free_port() if webhook_cert_dir is not None else 0
        webhook = ["--webhook-server-port", str(self.webhook_port)]
        if webhook_cert_dir is not None:
            webhook += ["--webhook-cert-dir", str(webhook_cert_dir)]
        command = [
            sys.executable,
            "-m",
            "trainop.cli.main",
            "operator",
            "--kubeconfig",
            str(kubeconfig),
            "--metrics-bind-address",
            f"127.0.0.1:{self.metrics_port}",
            "--health-probe-bind-address",
            f"127.0.0.1:{self.health_port}",
            *webhook,
            *args,
        ]
        self._log = log.open("ab")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            command, stdout=self._log, stderr=subprocess.STDOUT, env=env
        )

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        code = self.process.wait(timeout=timeout)
        self._log.close()
        return code


def custom(api: k8s.ApiClient) -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(api)


def get_job(api: k8s.ApiClient, plural: str, name: str, namespace: str = "default") -> Any:
    return custom(api).get_namespaced_custom_object("kubeflow.org", "v1", namespace, plural, name)
