"""The validating admission webhook server: HTTPS, one path per job kind.

With ``trainer`` (a runtime reader: the operator runs TrainJobs) it also serves Trainer v2's
mutating and validating paths (``controller.trainjob_admission``, spec 6.1).

``WebhookServer`` serves ``POST /validate-kubeflow-org-v1-<kind>`` for every enabled kind (all
of them by default, MPIJob and MXJob included) and hands each body to ``controller.admission``,
which decides. This module owns only the transport: TLS, listening, readiness, and turning any
unexpected failure into a JSON 500 (logged here, with its traceback; never sent to the client).

Certificates (``start``), in order of preference:

1. a ``CertBundle`` given by the caller (e.g. read from or stored into the webhook Secret by
   ``controller.cert_publishing``), written into the cert dir;
2. ``tls.crt``/``tls.key`` already in the cert dir (a mounted Secret, cert-manager, a previous
   run), served as they are;
3. otherwise a freshly generated CA and serving certificate (``controller.certs``), written
   into the cert dir.

When the cert dir cannot be written (a read-only Secret mount that the kubelet has not filled
yet) the files go to a private temporary directory instead. ``reload_certs`` swaps in new
files that appear in the cert dir (cert-manager renewals, the kubelet syncing the Secret);
``start`` runs it every ``reload_interval`` seconds. New connections get the new certificate.

Readiness: ``ready`` is true once the certificates are loaded and the socket listens;
``not_ready_reason`` says why not (``certificates are not ready`` first, as upstream's
``/readyz``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from trainop.api.kinds import KINDS, KindInfo
from trainop.controller import admission, certs, trainjob_admission
from trainop.kube.clock import Clock, LoopClock

log = logging.getLogger(__name__)

# controller-runtime's limit: an UPDATE carries two objects of up to ~1.5 MB each.
MAX_REQUEST_BYTES = 7 * 1024 * 1024
NOT_READY_CERTS = "certificates are not ready"
NOT_READY_LISTENING = "webhook server is not listening"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    """Where and as whom the webhook serves (upstream's flags, spec section 10.1)."""

    host: str = "0.0.0.0"
    port: int = 9443
    cert_dir: Path = certs.DEFAULT_CERT_DIR
    service_name: str = "training-operator"
    namespace: str = "kubeflow"
    reload_interval: float = 10.0

    @property
    def dns_name(self) -> str:
        """The name the API server calls the webhook by: ``<service>.<namespace>.svc``."""
        return certs.dns_names(service=self.service_name, namespace=self.namespace)[0]


class WebhookServer:
    """HTTPS admission webhook for job kinds; see the module docstring."""

    def __init__(
        self,
        *,
        settings: WebhookSettings,
        kinds: Sequence[KindInfo] = KINDS,
        bundle: certs.CertBundle | None = None,
        clock: Clock | None = None,
        trainer: trainjob_admission.RuntimeLookup | None = None,
    ) -> None:
        self._settings = settings
        self._kinds = tuple(kinds)
        self._trainer = trainer  # serve Trainer v2's four paths, reading runtimes with it
        self._given = bundle
        self._clock = clock or LoopClock()
        self._context: ssl.SSLContext | None = None
        self._loaded: certs.CertBundle | None = None
        self._rejected: tuple[bytes, bytes] | None = None  # warned about once, not every poll
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._reloader: asyncio.Task[None] | None = None

    @property
    def ready(self) -> bool:
        """Certificates loaded and the socket listening: what ``/readyz`` reports."""
        return self.not_ready_reason is None

    @property
    def not_ready_reason(self) -> str | None:
        """Why the server is not ready, or None when it is."""
        if self._context is None:
            return NOT_READY_CERTS
        if self._runner is None or not self._port:
            return NOT_READY_LISTENING
        return None

    @property
    def port(self) -> int:
        """The port actually bound (useful with port 0); 0 before ``start``."""
        return self._port

    @property
    def ca_cert(self) -> bytes:
        """PEM of the CA that signed the serving certificate (empty when unknown)."""
        return self._loaded.ca_cert if self._loaded else b""

    @property
    def paths(self) -> tuple[str, ...]:
        """The URL paths served, one per kind."""
        v1 = tuple(admission.path_of(info) for info in self._kinds)
        return v1 + (trainjob_admission.paths() if self._trainer is not None else ())

    async def start(self) -> None:
        """Load (or make) the certificates, then listen. Raises ``OSError`` if it cannot bind."""
        bundle, directory = self._place_certs()
        self._context = _server_context(directory)
        self._loaded = bundle
        app = web.Application(client_max_size=MAX_REQUEST_BYTES, middlewares=[_shield])
        for info in self._kinds:
            app.router.add_post(admission.path_of(info), _handler(info))
        if self._trainer is not None:
            for path in trainjob_admission.paths():
                app.router.add_post(path, _trainer_handler(path, self._trainer, self._clock))
        runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await runner.setup()
        site = web.TCPSite(
            runner, self._settings.host, self._settings.port, ssl_context=self._context
        )
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._port = _bound_port(runner)
        if self._settings.reload_interval > 0:
            self._reloader = asyncio.create_task(self._reload_forever())
        log.info("webhook server listening on port %d for %s", self._port, self._settings.dns_name)

    async def stop(self) -> None:
        """Stop listening; the server reports not ready from here on."""
        if self._reloader is not None:
            self._reloader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reloader
            self._reloader = None
        if self._runner is not None:
            runner, self._runner, self._port = self._runner, None, 0
            await runner.cleanup()

    def reload_certs(self) -> bool:
        """Serve new ``tls.crt``/``tls.key`` from the cert dir if they changed; True if swapped.

        Files that do not load (a key that does not match, a half-synced mount) are ignored
        with a warning and the current certificate stays in service.
        """
        found = certs.read_dir(self._settings.cert_dir)
        if self._context is None or self._loaded is None or found is None:
            return False
        if (found.cert, found.key) in ((self._loaded.cert, self._loaded.key), self._rejected):
            return False
        cert_dir = self._settings.cert_dir
        # A failed load leaves an SSLContext half-changed (new certificate, old key), so the
        # files are checked on a fresh context first, from a private copy that cannot change
        # between the check and the swap.
        with tempfile.TemporaryDirectory(prefix="trainop-webhook-reload-") as snapshot:
            try:
                certs.write_dir(_with_ca(found, b""), Path(snapshot))
                _server_context(Path(snapshot))
                self._context.load_cert_chain(
                    Path(snapshot, certs.CERT_FILE), Path(snapshot, certs.KEY_FILE)
                )
            except (ssl.SSLError, OSError) as exc:
                log.warning("ignoring unusable certificates in %s: %s", cert_dir, exc)
                self._rejected = (found.cert, found.key)
                return False
        self._loaded = found if found.ca_cert else _with_ca(found, self._loaded.ca_cert)
        log.info("webhook serving certificate reloaded from %s", cert_dir)
        return True

    async def _reload_forever(self) -> None:
        while True:
            await asyncio.sleep(self._settings.reload_interval)
            self.reload_certs()

    def _place_certs(self) -> tuple[certs.CertBundle, Path]:
        """The bundle to serve and the directory whose files hold it (module docstring)."""
        cert_dir = self._settings.cert_dir
        on_disk = certs.read_dir(cert_dir)
        if self._given is None and on_disk is not None:
            now = self._clock.now()
            if not certs.is_usable(on_disk, dns_name=self._settings.dns_name, now=now):
                log.warning(
                    "the certificate in %s does not name %s or expires soon; serving it anyway",
                    cert_dir,
                    self._settings.dns_name,
                )
            return on_disk, cert_dir
        bundle = self._given or certs.generate(
            service=self._settings.service_name,
            namespace=self._settings.namespace,
            now=self._clock.now(),
        )
        try:
            certs.write_dir(bundle, cert_dir)
        except OSError as exc:
            private = Path(tempfile.mkdtemp(prefix="trainop-webhook-certs-"))
            log.warning(
                "cannot write %s (%s); serving certificates from %s", cert_dir, exc, private
            )
            certs.write_dir(bundle, private)
            return bundle, private
        return bundle, cert_dir


def _server_context(directory: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(directory / certs.CERT_FILE, directory / certs.KEY_FILE)
    return context


def _with_ca(bundle: certs.CertBundle, ca_cert: bytes) -> certs.CertBundle:
    return certs.CertBundle(cert=bundle.cert, key=bundle.key, ca_cert=ca_cert)


def _bound_port(runner: web.AppRunner) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    return 0


def _handler(info: KindInfo) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        reply = admission.review(info, await request.read())
        return web.json_response(reply.body, status=reply.status)

    return handle


def _trainer_handler(path: str, lookup: trainjob_admission.RuntimeLookup, clock: Clock) -> Handler:
    async def handle(request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        reply = await trainjob_admission.review(path, raw, lookup=lookup, now=clock.now())
        return web.json_response(reply.body, status=reply.status)

    return handle


@web.middleware
async def _shield(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A worker boundary: an unexpected failure is logged once and answered without details."""
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except Exception:
        log.exception("webhook %s failed", request.path)
        status = {"code": 500, "reason": "InternalError", "message": "internal error, see the log"}
        body = {
            "apiVersion": admission.REVIEW_API_VERSIONS[0],
            "kind": admission.REVIEW_KIND,
            "response": {"uid": "", "allowed": False, "status": status},
        }
        return web.json_response(body, status=500)
