"""Making the webhook's certificates known to the cluster: the Secret and the CA bundle.

Upstream's rotator (spec section 10.2) keeps the CA and serving certificate in the Secret
``<webhook-secret-name>`` of the operator namespace, which the Deployment mounts at the cert
dir, and writes the CA into every webhook of the ValidatingWebhookConfiguration
``validator.training-operator.kubeflow.org`` so the API server trusts the server. Here:

- ``ensure_secret`` returns the bundle stored in the Secret when it is usable for
  ``<service>.<namespace>.svc``; otherwise it makes a new one and stores it (creating the
  Secret, or filling the empty one the manifests ship). Racing replicas converge: a conflict
  re-reads the Secret and adopts what the winner stored.
- ``inject_ca_bundle`` sets ``clientConfig.caBundle`` on every webhook of one configuration,
  validating or mutating, writing only when something changes. The operator calls it for each
  configuration of ``webhook_configurations.injected``: the v1 one, and Trainer v2's
  ``defaulter.trainer.kubeflow.org`` (mutating) and ``validator.trainer.kubeflow.org`` when it
  runs TrainJobs, as upstream Trainer's cert controller does for its two.

Both go through ``kube.client.Client``; API errors other than conflicts propagate to the caller
(the operator's start-up, which retries or exits). The Secret's keys are the rotator's:
``ca.crt``, ``ca.key``, ``tls.crt``, ``tls.key``.
"""

from __future__ import annotations

import base64
import contextlib
import copy
from datetime import datetime

from trainop import errors
from trainop.controller import admission, certs
from trainop.controller.webhook_configurations import VALIDATING
from trainop.kube.client import Client, Obj
from trainop.kube.resources import SECRETS, Resource

WEBHOOK_CONFIGURATIONS = VALIDATING
DEFAULT_SECRET_NAME = "training-operator-webhook-cert"
_ATTEMPTS = 3
_SECRET_KEYS = {
    certs.CERT_FILE: "cert",
    certs.KEY_FILE: "key",
    certs.CA_FILE: "ca_cert",
    certs.CA_KEY_FILE: "ca_key",
}


def secret_data(bundle: certs.CertBundle) -> dict[str, str]:
    """The Secret ``data`` holding ``bundle`` (base64, the rotator's keys)."""
    return {
        key: base64.b64encode(getattr(bundle, attribute)).decode()
        for key, attribute in _SECRET_KEYS.items()
    }


def bundle_from_secret(secret: Obj) -> certs.CertBundle | None:
    """The bundle a Secret holds, or None when it lacks a certificate, a key or the CA."""
    data = secret.get("data") or {}
    try:
        values = {
            attribute: base64.b64decode(data.get(key) or "", validate=True)
            for key, attribute in _SECRET_KEYS.items()
        }
    except ValueError:
        return None
    if not (values["cert"] and values["key"] and values["ca_cert"]):
        return None
    return certs.CertBundle(**values)


async def ensure_secret(
    client: Client, *, namespace: str, name: str, service: str, now: datetime
) -> certs.CertBundle:
    """The usable bundle in Secret ``namespace/name``, made and stored there if need be."""
    for _ in range(_ATTEMPTS - 1):
        # A conflict means another replica stored its bundle first: read and adopt it.
        with contextlib.suppress(errors.ConflictError, errors.AlreadyExistsError):
            return await _ensure_secret_once(
                client, namespace=namespace, name=name, service=service, now=now
            )
    return await _ensure_secret_once(
        client, namespace=namespace, name=name, service=service, now=now
    )


async def inject_ca_bundle(
    client: Client,
    *,
    ca_cert: bytes,
    name: str = admission.CONFIGURATION_NAME,
    resource: Resource = WEBHOOK_CONFIGURATIONS,
) -> bool:
    """Put ``ca_cert`` into every webhook of the configuration ``name`` (of ``resource``:
    validating or mutating webhook configurations); True if it wrote.

    ``NotFoundError`` when the configuration does not exist (it is part of the manifests).
    """
    for _ in range(_ATTEMPTS - 1):
        with contextlib.suppress(errors.ConflictError):
            return await _inject_once(client, ca_cert=ca_cert, name=name, resource=resource)
    return await _inject_once(client, ca_cert=ca_cert, name=name, resource=resource)


async def _ensure_secret_once(
    client: Client, *, namespace: str, name: str, service: str, now: datetime
) -> certs.CertBundle:
    secret = await _secret_or_none(client, namespace=namespace, name=name)
    stored = bundle_from_secret(secret) if secret is not None else None
    dns_name = certs.dns_names(service=service, namespace=namespace)[0]
    if stored is not None and certs.is_usable(stored, dns_name=dns_name, now=now):
        return stored
    bundle = certs.generate(service=service, namespace=namespace, now=now)
    await _store(client, secret, bundle, namespace=namespace, name=name)
    return bundle


async def _inject_once(client: Client, *, ca_cert: bytes, name: str, resource: Resource) -> bool:
    encoded = base64.b64encode(ca_cert).decode()
    config = await client.get(resource, name=name)
    if all(_ca_bundle(webhook) == encoded for webhook in config.get("webhooks") or []):
        return False
    updated = copy.deepcopy(config)
    for webhook in updated.get("webhooks") or []:
        webhook.setdefault("clientConfig", {})["caBundle"] = encoded
    await client.replace(resource, updated)
    return True


def _ca_bundle(webhook: Obj) -> object:
    client_config = webhook.get("clientConfig")
    return client_config.get("caBundle") if isinstance(client_config, dict) else None


async def _secret_or_none(client: Client, *, namespace: str, name: str) -> Obj | None:
    try:
        return await client.get(SECRETS, name=name, namespace=namespace)
    except errors.NotFoundError:
        return None


async def _store(
    client: Client, secret: Obj | None, bundle: certs.CertBundle, *, namespace: str, name: str
) -> None:
    data = secret_data(bundle)
    if secret is None:
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "data": data,
        }
        await client.create(SECRETS, body, namespace=namespace)
    else:
        await client.replace(SECRETS, {**secret, "data": data}, namespace=namespace)
