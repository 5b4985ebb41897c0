"""The operator process: client, metrics, probes, webhook, leader election and the manager.

``run_operator`` is what ``trainop operator`` calls. Order (spec 10.2, with our fixes): probes
and metrics come up first; the admission webhook's certificates are taken from (or stored in)
the Secret, the webhook starts and its CA is injected into the webhook configurations (the v1
ValidatingWebhookConfiguration, and Trainer v2's two when TrainJobs run) —
on every replica, leader or not; ``/readyz`` is true once the webhook listens and the caches
have synced. With leader election the process waits for the Lease, then runs the manager while
renewing it, and exits if it loses it; without, it runs the manager at once. Cancellation
(SIGTERM/SIGINT) stops everything and releases the Lease so a standby takes over at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from dataclasses import dataclass, field

from trainop import errors
from trainop.controller import webhook_configurations
from trainop.controller.cert_publishing import ensure_secret, inject_ca_bundle
from trainop.controller.leader import LeaderElector
from trainop.controller.manager import Manager, ManagerOptions
from trainop.controller.metrics import Metrics
from trainop.controller.serving import ProbeServer
from trainop.controller.trainjob_runtime import live_lookup
from trainop.controller.webhook import WebhookServer, WebhookSettings
from trainop.kube.client import Client
from trainop.kube.clock import Clock, LoopClock
from trainop.kube.http import HttpClient
from trainop.kube.ratelimit import RateLimitedClient, TokenBucket

log = logging.getLogger(__name__)

DEFAULT_LEADER_ELECTION_ID = "1ca428e5.training-operator.kubeflow.org"


@dataclass(frozen=True, slots=True)
class OperatorConfig:
    """Everything ``trainop operator``'s flags decide."""

    manager: ManagerOptions = field(default_factory=ManagerOptions)
    kubeconfig: str | None = None
    context: str | None = None
    metrics_address: str = ":8080"
    health_address: str = ":8081"
    leader_elect: bool = False
    leader_election_id: str = DEFAULT_LEADER_ELECTION_ID
    leader_election_namespace: str = field(
        default_factory=lambda: os.environ.get("MY_POD_NAMESPACE", "kubeflow")
    )
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}_{uuid.uuid4()}")
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    qps: float = 20.0
    burst: int = 30
    webhook: WebhookSettings | None = field(default_factory=WebhookSettings)
    webhook_secret_name: str = "training-operator-webhook-cert"


async def run_operator(
    config: OperatorConfig, *, client: Client | None = None, clock: Clock | None = None
) -> None:
    """Run until cancelled (or until leadership is lost, which raises)."""
    metrics = Metrics()
    clock = clock or LoopClock()
    if client is None:
        http = HttpClient.from_kubeconfig(
            path=config.kubeconfig,
            context=config.context,
            on_request=metrics.count_request,
            on_response=metrics.count_response,
        )
        client = RateLimitedClient(http, TokenBucket(qps=config.qps, burst=config.burst))
    manager = Manager(client=client, clock=clock, options=config.manager, metrics=metrics)
    webhook: WebhookServer | None = None

    def readiness() -> tuple[bool, str]:
        if webhook is not None and not webhook.ready:
            return False, webhook.not_ready_reason or "webhook is not ready"
        return manager.ready, manager.not_ready_reason

    probes = ProbeServer(
        metrics=metrics,
        ready=readiness,
        metrics_address=config.metrics_address,
        health_address=config.health_address,
    )
    await probes.start()
    try:
        webhook = await _start_webhook(config, client, clock)
        if config.leader_elect:
            await _run_as_leader(config, client, clock, manager, metrics)
        else:
            await manager.run()
    finally:
        if webhook is not None:
            await webhook.stop()
        await probes.stop()
        await client.close()


async def _start_webhook(
    config: OperatorConfig, client: Client, clock: Clock
) -> WebhookServer | None:
    settings = config.webhook
    if settings is None:
        return None
    bundle = None
    try:
        bundle = await ensure_secret(
            client,
            namespace=settings.namespace,
            name=config.webhook_secret_name,
            service=settings.service_name,
            now=clock.now(),
        )
    except errors.ApiError as exc:
        log.warning(
            "webhook certificates not kept in Secret %s: %s", config.webhook_secret_name, exc
        )
    trainer = live_lookup(client) if config.manager.trainjobs else None
    server = WebhookServer(settings=settings, bundle=bundle, trainer=trainer)
    await server.start()
    for target in webhook_configurations.injected(trainjobs=config.manager.trainjobs):
        try:
            await inject_ca_bundle(
                client, ca_cert=server.ca_cert, name=target.name, resource=target.resource
            )
        except errors.ApiError as exc:
            log.warning("CA bundle not injected into %s %s: %s", target.resource.kind,
                        target.name, exc)  # fmt: skip
    return server


async def _run_as_leader(
    config: OperatorConfig, client: Client, clock: Clock, manager: Manager, metrics: Metrics
) -> None:
    elector = LeaderElector(
        client=client,
        clock=clock,
        namespace=config.leader_election_namespace,
        name=config.leader_election_id,
        identity=config.identity,
        lease_duration=config.lease_duration,
        renew_deadline=config.renew_deadline,
        retry_period=config.retry_period,
    )
    log.info("%s waiting for leadership", config.identity)
    status = metrics.leader_election_status.labels(name=config.leader_election_id)
    status.set(0)
    await elector.acquire()
    status.set(1)
    tasks = [asyncio.create_task(manager.run()), asyncio.create_task(elector.hold())]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()  # re-raise LostLeadershipError (or a manager failure)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        status.set(0)
        await elector.release()
