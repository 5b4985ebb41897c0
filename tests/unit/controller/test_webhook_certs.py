"""Webhook certificates: generated, read, reloaded, stored in a Secret, injected; readiness."""

from __future__ import annotations

import asyncio
import base64
import stat
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from tests.unit.api.builders import manifest
from tests.unit.controller.webhook_support import admission_review, settings, trusting
from trainop import errors
from trainop.api.kinds import KINDS
from trainop.controller import admission, cert_publishing, certs
from trainop.controller.webhook import NOT_READY_CERTS, NOT_READY_LISTENING, WebhookServer
from trainop.kube.fake import FakeClient
from trainop.kube.resources import SECRETS

NOW = datetime(2026, 11, 20, tzinfo=UTC)
SERVICE, NAMESPACE = "training-operator", "kubeflow"
SVC = "training-operator.kubeflow.svc"


def make_bundle() -> certs.CertBundle:
    return certs.generate(service=SERVICE, namespace=NAMESPACE, now=NOW)


@pytest.fixture(scope="module")
def bundle() -> certs.CertBundle:
    return make_bundle()


async def call(server: WebhookServer, ca_cert: bytes, *, host: str = "127.0.0.1") -> bool:
    """POST a valid TFJob review trusting only ``ca_cert``; True when it is allowed."""
    connector = aiohttp.TCPConnector(ssl=trusting(ca_cert))
    url = f"https://{host}:{server.port}/validate-kubeflow-org-v1-tfjob"
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.post(url, json=admission_review(manifest("TFJob"))) as response,
    ):
        reply: dict[str, Any] = await response.json()
        return bool(reply["response"]["allowed"])


def test_generated_certificates_name_the_service_and_chain_to_the_ca(
    bundle: certs.CertBundle,
) -> None:
    ca = x509.load_pem_x509_certificate(bundle.ca_cert)
    cert = x509.load_pem_x509_certificate(bundle.cert)
    assert ca.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == certs.CA_NAME
    assert ca.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)[0].value == (
        certs.ORGANIZATION
    )
    assert cert.issuer == ca.subject
    cert.verify_directly_issued_by(ca)
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [
        SVC,
        "training-operator.kubeflow.svc.cluster.local",
        "localhost",
    ]
    assert certs.is_usable(bundle, dns_name=SVC, now=NOW)


def test_a_certificate_is_unusable_for_another_name_near_expiry_or_when_garbage(
    bundle: certs.CertBundle,
) -> None:
    assert not certs.is_usable(bundle, dns_name="other.kubeflow.svc", now=NOW)
    near_end = NOW + certs.VALIDITY - certs.RENEW_BEFORE + timedelta(days=1)
    assert not certs.is_usable(bundle, dns_name=SVC, now=near_end)
    assert not certs.is_usable(certs.CertBundle(cert=b"junk", key=b""), dns_name=SVC, now=NOW)


def test_without_files_the_server_generates_writes_and_serves_its_own(tmp_path: Path) -> None:
    cert_dir = tmp_path / "serving-certs"

    async def main() -> None:
        server = WebhookServer(settings=settings(cert_dir))
        assert not server.ready
        assert server.not_ready_reason == NOT_READY_CERTS
        await server.start()
        try:
            assert server.ready
            assert server.not_ready_reason is None
            assert (cert_dir / certs.CA_FILE).read_bytes() == server.ca_cert
            assert await call(server, server.ca_cert)
            assert await call(server, server.ca_cert, host="localhost")
        finally:
            await server.stop()
        assert not server.ready
        assert server.not_ready_reason == NOT_READY_LISTENING

    asyncio.run(main())
    assert stat.S_IMODE((cert_dir / certs.KEY_FILE).stat().st_mode) == 0o600
    assert {p.name for p in cert_dir.iterdir()} == {"tls.crt", "tls.key", "ca.crt"}


def test_files_already_in_the_cert_dir_are_served_as_they_are(
    tmp_path: Path, bundle: certs.CertBundle
) -> None:
    certs.write_dir(bundle, tmp_path)

    async def main() -> None:
        server = WebhookServer(settings=settings(tmp_path))
        await server.start()
        try:
            assert server.ca_cert == bundle.ca_cert
            assert await call(server, bundle.ca_cert)
        finally:
            await server.stop()

    asyncio.run(main())
    assert (tmp_path / certs.CERT_FILE).read_bytes() == bundle.cert


def test_a_client_trusting_another_ca_is_refused(tmp_path: Path, bundle: certs.CertBundle) -> None:
    async def main() -> None:
        server = WebhookServer(settings=settings(tmp_path), bundle=bundle)
        await server.start()
        try:
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await call(server, make_bundle().ca_cert)
        finally:
            await server.stop()

    asyncio.run(main())


def test_an_unwritable_cert_dir_falls_back_to_a_private_directory(
    tmp_path: Path, bundle: certs.CertBundle
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")

    async def main() -> None:
        server = WebhookServer(settings=settings(blocker / "certs"), bundle=bundle)
        await server.start()
        try:
            assert server.ready
            assert await call(server, bundle.ca_cert)
        finally:
            await server.stop()

    asyncio.run(main())


def test_new_files_in_the_cert_dir_are_served_to_new_connections(
    tmp_path: Path, bundle: certs.CertBundle
) -> None:
    renewed = make_bundle()

    async def main() -> None:
        server = WebhookServer(settings=settings(tmp_path), bundle=bundle)
        await server.start()
        try:
            assert not server.reload_certs()  # nothing changed yet
            certs.write_dir(renewed, tmp_path)
            assert server.reload_certs()
            assert server.ca_cert == renewed.ca_cert
            assert await call(server, renewed.ca_cert)
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await call(server, bundle.ca_cert)
        finally:
            await server.stop()

    asyncio.run(main())


def test_files_that_do_not_load_are_ignored_and_the_old_certificate_stays(
    tmp_path: Path, bundle: certs.CertBundle
) -> None:
    other = make_bundle()

    async def main() -> None:
        server = WebhookServer(settings=settings(tmp_path), bundle=bundle)
        await server.start()
        try:
            # A certificate with someone else's key: a half-synced mount.
            mismatched = certs.CertBundle(cert=other.cert, key=bundle.key)
            certs.write_dir(mismatched, tmp_path)
            assert not server.reload_certs()
            assert server.ca_cert == bundle.ca_cert
            assert await call(server, bundle.ca_cert)
        finally:
            await server.stop()

    asyncio.run(main())


def test_a_port_in_use_fails_start_and_the_server_stays_not_ready(
    tmp_path: Path, bundle: certs.CertBundle
) -> None:
    async def main() -> None:
        first = WebhookServer(settings=settings(tmp_path), bundle=bundle)
        await first.start()
        try:
            taken = replace(settings(tmp_path), port=first.port)
            second = WebhookServer(settings=taken, bundle=bundle)
            with pytest.raises(OSError, match="address already in use"):
                await second.start()
            assert second.not_ready_reason == NOT_READY_LISTENING
        finally:
            await first.stop()

    asyncio.run(main())


# --- the Secret and the CA bundle, through the fake client ---------------------------------


def webhook_configuration() -> dict[str, Any]:
    webhooks = [
        {
            "name": admission.webhook_name(info),
            "clientConfig": {
                "service": {"name": SERVICE, "namespace": NAMESPACE, "path": path},
            },
        }
        for info, path in [(k, admission.path_of(k)) for k in KINDS[:2]]
    ]
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": admission.CONFIGURATION_NAME},
        "webhooks": webhooks,
    }


async def ensure(client: FakeClient, *, now: datetime = NOW) -> certs.CertBundle:
    return await cert_publishing.ensure_secret(
        client,
        namespace=NAMESPACE,
        name=cert_publishing.DEFAULT_SECRET_NAME,
        service=SERVICE,
        now=now,
    )


def test_the_secret_is_created_once_and_then_reused() -> None:
    async def main() -> None:
        client = FakeClient()
        made = await ensure(client)
        secret = await client.get(
            SECRETS, name=cert_publishing.DEFAULT_SECRET_NAME, namespace=NAMESPACE
        )
        assert set(secret["data"]) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}
        assert cert_publishing.bundle_from_secret(secret) == made
        writes_before = [c for c in client.calls if c[0] != "get"]
        assert await ensure(client) == made
        assert [c for c in client.calls if c[0] != "get"] == writes_before

    asyncio.run(main())


def test_an_empty_or_expiring_secret_is_filled_with_a_new_bundle() -> None:
    async def main() -> None:
        client = FakeClient()
        empty = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "training-operator-webhook-cert"},
        }
        await client.create(SECRETS, empty, namespace=NAMESPACE)
        first = await ensure(client)
        assert ("replace", "secrets") in client.calls
        later = NOW + certs.VALIDITY - certs.RENEW_BEFORE + timedelta(days=1)
        renewed = await ensure(client, now=later)
        assert renewed != first
        assert certs.is_usable(renewed, dns_name=SVC, now=later)

    asyncio.run(main())


def test_a_conflicting_secret_write_adopts_what_the_other_replica_stored() -> None:
    async def main() -> None:
        client = FakeClient()
        client.inject("create", errors.AlreadyExistsError("taken", status=409), times=1)
        made = await ensure(client)
        stored = await client.get(
            SECRETS, name=cert_publishing.DEFAULT_SECRET_NAME, namespace=NAMESPACE
        )
        assert cert_publishing.bundle_from_secret(stored) == made
        assert client.calls.count(("create", "secrets")) == 2

    asyncio.run(main())


def test_the_ca_is_injected_into_every_webhook_once(bundle: certs.CertBundle) -> None:
    resource = cert_publishing.WEBHOOK_CONFIGURATIONS

    async def main() -> None:
        client = FakeClient()
        await client.create(resource, webhook_configuration())
        client.inject("replace", errors.ConflictError("stale", status=409), times=1)
        assert await cert_publishing.inject_ca_bundle(client, ca_cert=bundle.ca_cert)
        config = await client.get(resource, name=admission.CONFIGURATION_NAME)
        bundles = [base64.b64decode(w["clientConfig"]["caBundle"]) for w in config["webhooks"]]
        assert bundles == [bundle.ca_cert, bundle.ca_cert]
        assert config["webhooks"][0]["clientConfig"]["service"]["name"] == SERVICE
        assert not await cert_publishing.inject_ca_bundle(client, ca_cert=bundle.ca_cert)
        assert client.calls.count(("replace", resource.plural)) == 2  # one conflict, one write

    asyncio.run(main())


def test_a_missing_webhook_configuration_is_reported() -> None:
    async def main() -> None:
        with pytest.raises(errors.NotFoundError):
            await cert_publishing.inject_ca_bundle(FakeClient(), ca_cert=b"ca")

    asyncio.run(main())


def test_the_injected_ca_verifies_the_server_that_serves_the_secret(tmp_path: Path) -> None:
    """The whole start-up: Secret → CA bundle in the configuration → server; a client that
    trusts only the configuration's caBundle (as the API server does) gets through."""
    resource = cert_publishing.WEBHOOK_CONFIGURATIONS

    async def main() -> None:
        client = FakeClient()
        await client.create(resource, webhook_configuration())
        stored = await ensure(client)
        await cert_publishing.inject_ca_bundle(client, ca_cert=stored.ca_cert)
        config = await client.get(resource, name=admission.CONFIGURATION_NAME)
        ca_bundle = base64.b64decode(config["webhooks"][1]["clientConfig"]["caBundle"])
        server = WebhookServer(settings=settings(tmp_path), bundle=stored)
        await server.start()
        try:
            assert await call(server, ca_bundle)
        finally:
            await server.stop()

    asyncio.run(main())
