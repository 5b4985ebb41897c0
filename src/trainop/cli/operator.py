"""``trainop operator``: the operator process, with upstream's flags (spec 10.1) plus QPS/burst.

Flags keep upstream's names and defaults so existing Deployments work unchanged. Unknown
``--enable-scheme`` values fail with upstream's message. SIGTERM and SIGINT stop the process
cleanly (the Lease is released); any ``TrainopError`` ends it with one line and exit code 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from pathlib import Path

import click

from trainop import errors
from trainop.api.kinds import KINDS
from trainop.api.trainer.constants import TRAINJOB
from trainop.cli import eventloop
from trainop.controller.manager import ManagerOptions
from trainop.controller.operator import DEFAULT_LEADER_ELECTION_ID, OperatorConfig, run_operator
from trainop.controller.webhook import WebhookSettings
from trainop.engine.plan import EngineOptions
from trainop.frameworks import pytorch
from trainop.frameworks.options import DEFAULT_PYTORCH_INIT_CONTAINER_TEMPLATE, FrameworkOptions

# The v1 kinds, and Trainer v2's TrainJob (with its runtimes; never enabled by default, so
# that an operator dropped in for upstream's v1 one never races an upstream Trainer: note 112).
_SCHEMES = {info.kind.lower(): info.kind for info in KINDS} | {TRAINJOB.lower(): TRAINJOB}
_LOG_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "error": logging.ERROR}


def _schemes(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> tuple[str, ...]:
    del ctx, param
    kinds = []
    for value in values:
        kind = _SCHEMES.get(value.lower())
        if kind is None:
            raise click.BadParameter(f"scheme {value} is not supported yet")
        kinds.append(kind)
    return tuple(kinds)


@click.command("operator")
@click.option(
    "--enable-scheme",
    "schemes",
    multiple=True,
    callback=_schemes,
    help=(
        "Kind to run (repeatable, case-insensitive); none means every kubeflow.org/v1 kind. "
        "TrainJob (Trainer v2, needs the JobSet CRD) runs only when named, even where JobSet "
        "is served (manifests/overlays/trainer names it with every v1 kind)."
    ),
)
@click.option(
    "--namespace",
    envvar="KUBEFLOW_NAMESPACE",
    default="",
    help="Watch only this namespace (default: all; env KUBEFLOW_NAMESPACE).",
)
@click.option("--gang-scheduler-name", default="", help="volcano, scheduler-plugins, or empty.")
@click.option("--controller-threads", default=1, show_default=True, help="Workers per kind.")
@click.option("--metrics-bind-address", default=":8080", show_default=True)
@click.option("--health-probe-bind-address", default=":8081", show_default=True)
@click.option("--leader-elect", is_flag=True, help="Run as one of several replicas.")
@click.option("--leader-election-id", default=DEFAULT_LEADER_ELECTION_ID, show_default=True)
@click.option(
    "--leader-election-namespace",
    envvar="MY_POD_NAMESPACE",
    default="kubeflow",
    show_default=True,
    help="Namespace of the Lease (env MY_POD_NAMESPACE).",
)
@click.option("--leader-elect-lease-duration", default=15.0, show_default=True)
@click.option("--leader-elect-renew-deadline", default=10.0, show_default=True)
@click.option("--leader-elect-retry-period", default=2.0, show_default=True)
@click.option("--webhook-server-port", default=9443, show_default=True, help="0 disables it.")
@click.option(
    "--webhook-cert-dir", default="/tmp/k8s-webhook-server/serving-certs", show_default=True
)
@click.option("--webhook-service-name", default="training-operator", show_default=True)
@click.option("--webhook-secret-name", default="training-operator-webhook-cert", show_default=True)
@click.option("--pytorch-init-container-image", default="alpine:3.10", show_default=True)
@click.option("--pytorch-init-container-max-tries", default=100, show_default=True)
@click.option(
    "--pytorch-init-container-template-file",
    default="/etc/config/initContainer.yaml",
    show_default=True,
    help="YAML list of init containers for PyTorch workers (Go template with .MasterAddr, "
    ".InitContainerImage, .MaxTries); used when readable, else the built-in one.",
)
@click.option(
    "--mpi-kubectl-delivery-image", default="kubeflow/kubectl-delivery:latest", show_default=True
)
@click.option(
    "--kubeconfig",
    envvar="KUBECONFIG",
    default=None,
    help="Kubeconfig file (default: KUBECONFIG, ~/.kube/config or in-cluster).",
)
@click.option("--context", default=None, help="Kubeconfig context.")
@click.option("--qps", default=20.0, show_default=True, help="API requests per second.")
@click.option("--burst", default=30, show_default=True, help="API request burst.")
@click.option(
    "--zap-log-level",
    default="info",
    show_default=True,
    type=click.Choice(sorted(_LOG_LEVELS), case_sensitive=False),
)
@click.option("--zap-devel", is_flag=True, hidden=True)
def operator(**flags: object) -> None:
    """Run the training operator against a Kubernetes API server."""
    level = _LOG_LEVELS[str(flags["zap_log_level"]).lower()]
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    quiet_request_logs(level)
    try:
        eventloop.run(_serve(config_from_flags(flags)))
    except errors.TrainopError as exc:
        raise click.ClickException(str(exc)) from exc


def quiet_request_logs(level: int) -> None:
    """Keep httpx's one-line-per-request INFO log for ``--zap-log-level debug`` only.

    Starting 1,000 jobs sends ~20,000 requests; logging each one cost ~3% of the operator's
    time in the benchmark profile (docs/benchmarks.md) and drowned the operator's own log.
    """
    logging.getLogger("httpx2").setLevel(
        logging.DEBUG if level <= logging.DEBUG else logging.WARNING
    )


def config_from_flags(flags: dict[str, object]) -> OperatorConfig:
    """The operator configuration its parsed flags (and environment) describe."""
    frameworks = FrameworkOptions(
        pytorch_init_container_image=str(flags["pytorch_init_container_image"]),
        pytorch_init_container_max_tries=int(str(flags["pytorch_init_container_max_tries"])),
        pytorch_init_container_template=init_container_template(
            Path(str(flags["pytorch_init_container_template_file"]))
        ),
        mpi_kubectl_delivery_image=str(flags["mpi_kubectl_delivery_image"]),
    )
    engine = EngineOptions(
        gang_scheduler_name=str(flags["gang_scheduler_name"]), frameworks=frameworks
    )
    schemes = flags["schemes"]
    manager = ManagerOptions(
        kinds=tuple(schemes) if isinstance(schemes, tuple) else (),
        namespace=str(flags["namespace"]) or None,
        threads=int(str(flags["controller_threads"])),
        engine=engine,
    )
    return OperatorConfig(
        manager=manager,
        kubeconfig=str(flags["kubeconfig"]) if flags["kubeconfig"] else None,
        context=str(flags["context"]) if flags["context"] else None,
        metrics_address=str(flags["metrics_bind_address"]),
        health_address=str(flags["health_probe_bind_address"]),
        leader_elect=bool(flags["leader_elect"]),
        leader_election_id=str(flags["leader_election_id"]),
        leader_election_namespace=str(flags["leader_election_namespace"]),
        lease_duration=float(str(flags["leader_elect_lease_duration"])),
        renew_deadline=float(str(flags["leader_elect_renew_deadline"])),
        retry_period=float(str(flags["leader_elect_retry_period"])),
        qps=float(str(flags["qps"])),
        burst=int(str(flags["burst"])),
        webhook=_webhook(flags),
        webhook_secret_name=str(flags["webhook_secret_name"]),
    )


def init_container_template(path: Path) -> str:
    """The template in ``path`` when it can be read (upstream's rule), else the built-in one.

    A template that is read is rendered once here, so a broken file stops the operator at
    start (``InvalidTemplateError``) instead of failing every PyTorch worker's creation.
    """
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError):
        return DEFAULT_PYTORCH_INIT_CONTAINER_TEMPLATE
    pytorch.render_init_containers(text, master="job-master-0", image="image", max_tries=1)
    logging.getLogger(__name__).info("PyTorch init containers from %s", path)
    return text


def _webhook(flags: dict[str, object]) -> WebhookSettings | None:
    port = int(str(flags["webhook_server_port"]))
    if port == 0:
        return None
    return WebhookSettings(
        port=port,
        cert_dir=Path(str(flags["webhook_cert_dir"])),
        service_name=str(flags["webhook_service_name"]),
        namespace=str(flags["leader_election_namespace"]),
    )


async def _serve(config: OperatorConfig) -> None:
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        if task is not None:
            loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await run_operator(config)
