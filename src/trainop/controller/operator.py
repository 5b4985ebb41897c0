"""The operator process: client, metrics, probes, leader election and the manager, assembled.

``run_operator`` is what ``trainop operator`` calls. Order (spec 10.2, with our fixes): probes
and metrics come up first (``/readyz`` false until the caches sync); with leader election the
process waits for the Lease, then runs the manager while renewing it, and exits if it loses
it; without, it runs the manager at once. Cancellation (SIGTERM/SIGINT) stops everything and
releases the Lease so a standby takes over without waiting for expiry.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from dataclasses import dataclass, field

from trainop.controller.clock import Clock, LoopClock
from trainop.controller.leader import LeaderElector
from trainop.controller.manager import Manager, ManagerOptions
from trainop.controller.metrics import Metrics
from trainop.controller.serving import ProbeServer
from trainop.kube.client import Client
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


async def run_operator(
    config: OperatorConfig, *, client: Client | None = None, clock: Clock | None = None
) -> None:
    """Run until cancelled (or until leadership is lost, which raises)."""
    metrics = Metrics()
    clock = clock or LoopClock()
    if client is None:
        http = HttpClient.from_kubeconfig(
            path=config.kubeconfig, context=config.context, on_request=metrics.count_request
        )
        client = RateLimitedClient(http, TokenBucket(qps=config.qps, burst=config.burst))
    manager = Manager(client=client, clock=clock, options=config.manager, metrics=metrics)
    probes = ProbeServer(
        metrics=metrics,
        ready=lambda: (manager.ready, "caches are not synced yet"),
        metrics_address=config.metrics_address,
        health_address=config.health_address,
    )
    await probes.start()
    try:
        if config.leader_elect:
            await _run_as_leader(config, client, clock, manager)
        else:
            await manager.run()
    finally:
        await probes.stop()
        await client.close()


async def _run_as_leader(
    config: OperatorConfig, client: Client, clock: Clock, manager: Manager
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
    await elector.acquire()
    tasks = [asyncio.create_task(manager.run()), asyncio.create_task(elector.hold())]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()  # re-raise LostLeadershipError (or a manager failure)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await elector.release()
