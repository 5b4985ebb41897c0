"""TLS by default: the certificate files, the kubeconfig, loopback only, 401 without a token."""

from __future__ import annotations

import base64
import http.client
import json
import shutil
import socket
import ssl
import stat
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from tests.integration.cluster.apiserver import rawhttps
from tests.integration.cluster.apiserver.conftest import RunningServer, start_server
from trainop import errors
from trainop.cluster.apiserver.http import tls
from trainop.controller import certs
from trainop.kube.http import HttpClient
from trainop.kube.resources import PODS as PODS_RESOURCE

PODS = "/api/v1/namespaces/default/pods"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_secrets_are_private(api: RunningServer) -> None:
    state = api.server.config.state_dir
    private = [api.kubeconfig, state / "token", *sorted((state / tls.PKI_DIR).iterdir())]
    assert {p.name for p in private} >= {"kubeconfig", "token", "tls.key", "tls.crt", "ca.crt"}
    assert {p.name: _mode(p) for p in private} == {p.name: 0o600 for p in private}
    assert _mode(state / tls.PKI_DIR) == 0o700


def test_kubeconfig_carries_ca_and_token(api: RunningServer) -> None:
    config = yaml.safe_load(api.kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    assert cluster["server"] == f"https://127.0.0.1:{api.server.port}"
    assert cluster["certificate-authority-data"]
    assert config["users"][0]["user"]["token"] == api.server.token


def test_listens_on_loopback_only(api: RunningServer) -> None:
    runner = api.server._runner
    assert runner is not None
    servers = [getattr(site, "_server", None) for site in runner.sites]
    bound = {s.getsockname()[0] for server in servers for s in getattr(server, "sockets", [])}
    assert bound == {"127.0.0.1"}


def test_plain_http_is_refused(api: RunningServer) -> None:
    def plain_get() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", api.server.port, timeout=10)
        conn.request("GET", "/version")
        conn.getresponse().read()

    with pytest.raises((http.client.HTTPException, OSError)):
        plain_get()


def test_untrusted_ca_is_rejected(api: RunningServer) -> None:
    context = ssl.create_default_context()  # the system CAs, not the server's
    conn = http.client.HTTPSConnection("127.0.0.1", api.server.port, timeout=10, context=context)
    with pytest.raises(ssl.SSLCertVerificationError):
        conn.request("GET", "/version")


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_curl_without_token_is_401(api: RunningServer, tmp_path: Path) -> None:
    endpoint = rawhttps.Endpoint.load(api.kubeconfig)
    ca = tmp_path / "ca.crt"
    ca.write_bytes(endpoint.ca_pem)
    url = f"https://localhost:{endpoint.port}{PODS}"
    out = subprocess.run(
        ["curl", "-sS", "--cacert", str(ca), "-w", "\n%{http_code}", url],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    body, code = out.rsplit("\n", 1)
    assert code == "401"
    assert json.loads(body)["reason"] == "Unauthorized"


def test_certificate_survives_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    cas = []
    for _ in range(2):
        for running in start_server(state):
            cas.append(rawhttps.Endpoint.load(running.kubeconfig).ca_pem)
    assert cas[0] == cas[1]


@pytest.fixture
def plain(tmp_path: Path) -> Iterator[RunningServer]:
    yield from start_server(tmp_path / "plain", insecure_http=True)


def test_insecure_http_only_when_asked(plain: RunningServer) -> None:
    config = yaml.safe_load(plain.kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    assert cluster == {"server": f"http://127.0.0.1:{plain.server.port}"}
    with socket.create_connection(("127.0.0.1", plain.server.port), timeout=10):
        pass
    conn = http.client.HTTPConnection("127.0.0.1", plain.server.port, timeout=10)
    conn.request("GET", PODS)
    assert conn.getresponse().status == 401


def test_controller_client_verifies_with_the_kubeconfig_ca(
    api: RunningServer, tmp_path: Path
) -> None:
    good = HttpClient.from_kubeconfig(path=str(api.kubeconfig))
    assert api.run(good.list(PODS_RESOURCE, namespace="default")).resource_version
    api.run(good.close())
    other_ca = certs.generate(service="other", namespace="default", now=datetime.now(UTC))
    config = yaml.safe_load(api.kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    cluster["certificate-authority-data"] = base64.b64encode(other_ca.ca_cert).decode()
    wrong = tmp_path / "wrong-ca"
    wrong.write_text(yaml.safe_dump(config))
    client = HttpClient.from_kubeconfig(path=str(wrong))
    with pytest.raises(errors.UnreachableError, match="CERTIFICATE_VERIFY_FAILED"):
        api.run(client.list(PODS_RESOURCE, namespace="default"))
    api.run(client.close())


@pytest.mark.parametrize("flags", [[], ["--insecure-http"]])
def test_the_apiserver_command_serves_https_unless_the_flag_says_http(
    tmp_path: Path, flags: list[str]
) -> None:
    state = tmp_path / "state"
    argv = [sys.executable, "-m", "trainop.cli.main", "local", "apiserver"]
    process = subprocess.Popen(
        [*argv, "--state-dir", str(state), "--port", "0", *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()  # blocks until the server says where it serves
        assert first.startswith("serving "), (first, process.stderr)
        url = first.split()[1].rstrip(";")
        scheme = "http" if flags else "https"
        assert url.startswith(f"{scheme}://127.0.0.1:"), url
        server = yaml.safe_load((state / "kubeconfig").read_text())["clusters"][0]["cluster"]
        assert server["server"] == url
        assert ("certificate-authority-data" in server) is not bool(flags)
        if flags:
            port = int(url.rsplit(":", 1)[1])
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", PODS)
            assert conn.getresponse().status == 401
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert process.returncode == 0, process.stderr
