"""``TrainingClient``: upstream ``kubeflow-training``'s client, synchronous, over ``HttpClient``.

Method names, parameters, defaults and semantics follow upstream 1.9 (spec section 13.2), so a
script written for upstream runs with only its import changed. Differences, on purpose:

* jobs come back as trainop's typed models (``trainop.api.jobs``: ``job.metadata.name``,
  ``job.status.conditions[-1].type``), pods and events as plain dicts;
* ``create_job`` also accepts a manifest dict, and any kind's job; a function or an image can
  become a TFJob or PyTorchJob as upstream (``builders.FUNCTION_LAYOUTS``);
* API failures are ``trainop.errors.ApiError`` subclasses, argument errors
  ``InvalidArgumentError`` (a ``ValueError``), a Failed job while waiting ``JobFailedError``
  (a ``RuntimeError``), timeouts ``WaitTimeoutError`` (a ``TimeoutError``);
* ``wait_for_job_conditions`` watches the job (polling only as a fallback), so it returns as
  soon as a condition is reached rather than on the next poll;
* extras the CLI builds on: ``iter_job_logs``, ``get_job_events``, ``get_job_podgroup``,
  ``suspend_job``, ``resume_job``.

The async ``HttpClient`` runs on a private event loop thread (``bridge.LoopThread``); each
client owns one, released by ``close()`` or ``with TrainingClient() as client:``.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any

from trainop.api import manifest
from trainop.api.kinds import KindInfo, kind_info
from trainop.api.types import Job, JobCondition
from trainop.errors import ApiError, NotFoundError, UnknownKindError
from trainop.kube.client import Obj
from trainop.kube.http import HttpClient
from trainop.kube.resources import (
    COSCHEDULING_PODGROUPS,
    EVENTS,
    PODS,
    VOLCANO_PODGROUPS,
    Resource,
    job_resource,
)
from trainop.sdk import builders, config, constants, logs, watching
from trainop.sdk import follow as runner
from trainop.sdk.bridge import LoopThread
from trainop.sdk.errors import InvalidArgumentError, JobFailedError, WaitTimeoutError

log = logging.getLogger(__name__)
TIMEOUT = constants.DEFAULT_TIMEOUT


class TrainingClient:
    """Create, inspect, wait for, read logs of and delete kubeflow.org/v1 jobs (sync)."""

    def __init__(
        self,
        config_file: str | None = None,
        context: str | None = None,
        client_configuration: HttpClient | None = None,
        namespace: str | None = None,
        job_kind: str = constants.PYTORCHJOB_KIND,
    ) -> None:
        """Load ``config_file``/``context`` (see ``sdk.config`` for the defaults), unless
        ``client_configuration`` is an ``HttpClient`` to use as is. ``namespace`` defaults to
        the context's; ``job_kind`` is the default kind of every method."""
        self.job_kind = _info(job_kind).kind
        self.is_local = False
        if client_configuration is not None:
            self._http = client_configuration
            self.namespace = namespace or constants.DEFAULT_NAMESPACE
        else:
            target = config.resolve(config_file, context)
            self._http = HttpClient.from_kubeconfig(path=target.path, context=context)
            self.namespace = namespace or target.namespace
            self.is_local = target.is_local
        self._loop = LoopThread()

    def __enter__(self) -> TrainingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP connections and stop the private event loop."""
        try:
            self._loop.call(self._http.close(), timeout=10)
        finally:
            self._loop.close()

    # -- create ----------------------------------------------------------------------------

    def create_job(
        self,
        job: Job | Mapping[str, Any] | None = None,
        name: str | None = None,
        namespace: str | None = None,
        job_kind: str | None = None,
        base_image: str | None = None,
        train_func: Callable[..., Any] | None = None,
        parameters: Mapping[str, Any] | None = None,
        num_workers: int = 1,
        num_procs_per_worker: int | None = None,
        resources_per_worker: Mapping[str, Any] | None = None,
        num_chief_replicas: int | None = None,
        num_ps_replicas: int | None = None,
        packages_to_install: Sequence[str] | None = None,
        pip_index_url: str = constants.DEFAULT_PIP_INDEX_URL,
        env_vars: Mapping[str, Any] | Sequence[Any] | None = None,
    ) -> Job:
        """Create a job from ``job`` (a model or a manifest dict), or from ``train_func`` /
        ``base_image`` (then ``name`` is required). Returns the created job."""
        if job is not None:
            extras = {
                "name": name,
                "job_kind": job_kind,
                "base_image": base_image,
                "train_func": train_func,
                "parameters": parameters,
                "num_procs_per_worker": num_procs_per_worker,
                "resources_per_worker": resources_per_worker,
                "num_chief_replicas": num_chief_replicas,
                "num_ps_replicas": num_ps_replicas,
                "packages_to_install": packages_to_install,
                "env_vars": env_vars,
            }
            for argument, value in extras.items():
                if value is not None:
                    raise InvalidArgumentError(
                        "If `job` is set only `namespace` argument is allowed. "
                        f"Argument `{argument}` must be None."
                    )
            body = _wire(job)
        elif train_func is not None or base_image is not None:
            if not name:
                raise InvalidArgumentError("Job name must be set to create a job from a function")
            info = _info(job_kind or self.job_kind)
            body = builders.function_job(
                info=info,
                name=name,
                namespace=namespace,
                base_image=base_image or constants.JOB_PARAMETERS[info.kind]["base_image"],
                program=builders.Program(
                    train_func=train_func,
                    parameters=parameters,
                    packages_to_install=tuple(packages_to_install or ()),
                    pip_index_url=pip_index_url,
                ),
                args=builders.FunctionJobArgs(
                    num_workers=num_workers,
                    num_procs_per_worker=num_procs_per_worker,
                    num_chief_replicas=num_chief_replicas,
                    num_ps_replicas=num_ps_replicas,
                ),
                env_vars=builders.env_list(env_vars),
                resources_per_worker=resources_per_worker,
                local_python=_host_python() if self.is_local else None,
            )
        else:
            raise InvalidArgumentError("One of `job`, `train_func` or `base_image` must be set")
        parsed = manifest.load_job(body, source="create_job")
        ns = namespace or parsed.metadata.namespace or self.namespace
        body.setdefault("metadata", {})["namespace"] = ns
        created = self._call(
            self._http.create(job_resource(_info(parsed.kind)), body, namespace=ns)
        )
        log.info("%s %s/%s has been created", parsed.kind, ns, parsed.metadata.name)
        return manifest.parse_job(created)

    def ensure_namespace(self, namespace: str) -> bool:
        """Create ``namespace`` unless it exists; True when this call created it.

        A trainop extension (not in the upstream SDK), for local clusters: upstream's example
        manifests name ``namespace: kubeflow``, which a fresh local cluster does not have.
        """
        created: bool = self._call(runner.ensure_namespace(self._http, namespace))
        return created

    # -- read ------------------------------------------------------------------------------

    def get_job(
        self,
        name: str,
        namespace: str | None = None,
        job_kind: str | None = None,
        timeout: float = TIMEOUT,
    ) -> Job:
        """The job ``name`` (``NotFoundError`` if there is none)."""
        raw = self._call(self._get_raw(name, namespace, job_kind), timeout=timeout)
        return manifest.parse_job(raw)

    def list_jobs(
        self, namespace: str | None = None, job_kind: str | None = None, timeout: float = TIMEOUT
    ) -> list[Job]:
        """Every job of the kind in the namespace (an empty list if none)."""
        resource = self._resource(job_kind)
        listed = self._call(
            self._http.list(resource, namespace=namespace or self.namespace), timeout=timeout
        )
        return [manifest.parse_job(item) for item in listed.items]

    def get_job_conditions(
        self,
        name: str | None = None,
        namespace: str | None = None,
        job_kind: str | None = None,
        job: Job | None = None,
        timeout: float = TIMEOUT,
    ) -> list[JobCondition]:
        """The job's conditions (of ``job`` if given, else fetched by ``name``), or ``[]``."""
        if job is None:
            if not name:
                raise InvalidArgumentError("Job name must be set when `job` is not given")
            job = self.get_job(name, namespace, job_kind, timeout)
        return list(job.status.conditions or []) if job.status else []

    def _has_condition(self, kind: str, *args: Any, **kwargs: Any) -> bool:
        conditions = self.get_job_conditions(*args, **kwargs)
        return any(
            c.type == kind and c.status == constants.CONDITION_STATUS_TRUE for c in conditions
        )

    def is_job_created(
        self,
        name: str | None = None,
        namespace: str | None = None,
        job_kind: str | None = None,
        job: Job | None = None,
        timeout: float = TIMEOUT,
    ) -> bool:
        """Whether the job has a true ``Created`` condition."""
        return self._has_condition(
            constants.JOB_CONDITION_CREATED, name, namespace, job_kind, job, timeout
        )

    def is_job_running(
        self,
        name: str | None = None,
        namespace: str | None = None,
        job_kind: str | None = None,
        job: Job | None = None,
        timeout: float = TIMEOUT,
    ) -> bool:
        """Whether the job has a true ``Running`` condition."""
        return self._has_condition(
            constants.JOB_CONDITION_RUNNING, name, namespace, job_kind, job, timeout
        )

    def is_job_restarting(
        self,
        name: str | None = None,
        namespace: str | None = None,
        job_kind: str | None = None,
        job: Job | None = None,
        timeout: float = TIMEOUT,
    ) -> bool:
        """Whether the job has a true ``Restarting`` condition."""
        return self._has_condition(
            constants.JOB_CONDITION_RESTARTING, name, namespace, job_kind, job, timeout
        )

    def is_job_succeeded(
        self,
        name: str | None = None,
        namespace: str | None = None,
        job_kind: str | None = None,
        job: Job | None = None,
        timeout: float = TIMEOUT,
    ) -> bool:
        """Whether the job has a true ``Succeeded`` condition."""
        return self._has_condition(
            constants.JOB_CONDITION_SUCCEEDED, name, namespace, job_kind, job, timeout
        )

    def is_job_failed(
        self,
        name: str | None = None,
        namespace: str | None = None,
        job_kind: str | None = None,
        job: Job | None = None,
        timeout: float = TIMEOUT,
    ) -> bool:
        """Whether the job has a true ``Failed`` condition."""
        return self._has_condition(
            constants.JOB_CONDITION_FAILED, name, namespace, job_kind, job, timeout
        )

    # -- wait ------------------------------------------------------------------------------

    def wait_for_job_conditions(
        self,
        name: str,
        namespace: str | None = None,
        job_kind: str | None = None,
        expected_conditions: set[str] | frozenset[str] = frozenset({"Succeeded"}),
        wait_timeout: float = 600,
        polling_interval: float = 15,
        callback: Callable[[Job], Any] | None = None,
        timeout: float = TIMEOUT,
    ) -> Job:
        """Return the job once one of ``expected_conditions`` is true. ``JobFailedError`` if it
        Failed (and Failed was not expected), ``WaitTimeoutError`` after ``wait_timeout``
        seconds. ``callback(job)`` sees every observed state. ``timeout`` bounds each API call
        of the polling fallback, as upstream's per-call timeout."""
        expected = set(expected_conditions)
        if not expected <= constants.JOB_CONDITIONS:
            raise InvalidArgumentError(
                f"Expected conditions {sorted(expected)} must be a subset of "
                f"{sorted(constants.JOB_CONDITIONS)}"
            )
        del timeout  # each state arrives on a watch; the whole wait is bounded instead
        ns = namespace or self.namespace
        resource = self._resource(job_kind)
        states = watching.job_states(
            self._http, resource, name=name, namespace=ns, polling_interval=polling_interval
        )
        try:
            for raw in self._loop.iterate(states, timeout=wait_timeout):
                job = manifest.parse_job(raw)
                if self._reached(job, expected, callback):
                    return job
        except WaitTimeoutError as exc:
            raise WaitTimeoutError(
                f"Timeout waiting for {resource.kind} {ns}/{name} to reach conditions "
                f"{sorted(expected)} ({wait_timeout}s)"
            ) from exc
        raise NotFoundError(f"{resource.kind} {ns}/{name} is gone", status=404)

    def _reached(self, job: Job, expected: set[str], callback: Callable[[Job], Any] | None) -> bool:
        conditions = self.get_job_conditions(job=job)
        if conditions:
            last = conditions[-1]
            log.info("%s %s: %s=%s", job.kind, job.metadata.name, last.type, last.status)
        if callback is not None:
            callback(job)
        true = {c.type for c in conditions if c.status == constants.CONDITION_STATUS_TRUE}
        if (
            constants.JOB_CONDITION_FAILED in true
            and constants.JOB_CONDITION_FAILED not in expected
        ):
            message = next((c.message for c in reversed(conditions) if c.type == "Failed"), "")
            raise JobFailedError(
                f"{job.kind} {job.metadata.namespace}/{job.metadata.name} is Failed: {message}",
                job=job,
            )
        return bool(true & expected)

    # -- pods and logs ---------------------------------------------------------------------

    def get_job_pods(
        self,
        name: str,
        namespace: str | None = None,
        is_master: bool = False,
        replica_type: str | None = None,
        replica_index: int | None = None,
        timeout: float = TIMEOUT,
    ) -> list[Obj]:
        """The job's pods (dicts), narrowed to the master role, a replica type (lower-case, as
        upstream) and an index."""
        selector = pod_selector(name, is_master, replica_type, replica_index)
        listed = self._call(
            self._http.list(PODS, namespace=namespace or self.namespace, label_selector=selector),
            timeout=timeout,
        )
        return sorted(listed.items, key=lambda pod: pod["metadata"]["name"])

    def get_job_pod_names(
        self,
        name: str,
        namespace: str | None = None,
        is_master: bool = False,
        replica_type: str | None = None,
        replica_index: int | None = None,
        timeout: float = TIMEOUT,
    ) -> list[str]:
        """The names of ``get_job_pods``."""
        pods = self.get_job_pods(name, namespace, is_master, replica_type, replica_index, timeout)
        return [pod["metadata"]["name"] for pod in pods]

    def get_job_logs(
        self,
        name: str,
        namespace: str | None = None,
        job_kind: str | None = None,
        is_master: bool = True,
        replica_type: str | None = None,
        replica_index: int | None = None,
        follow: bool = False,
        timeout: float = TIMEOUT,
        verbose: bool = False,
        container: str | None = None,
    ) -> tuple[dict[str, str], dict[str, list[str]]]:
        """``(logs, events)``: pod name → log text of the selected pods (by default the master
        role's), and with ``verbose`` the job's and pods' events as upstream formats them.
        ``follow`` prints ``[Pod <name>]: <line>`` as lines arrive and returns when the job
        has ended."""
        collected: dict[str, list[str]] = {}
        lines = self.iter_job_logs(
            name,
            namespace,
            job_kind,
            is_master,
            replica_type,
            replica_index,
            follow,
            container,
            timeout=None if follow else timeout,
        )
        for pod, line in lines:
            collected.setdefault(pod, []).append(line)
            if follow:
                sys.stdout.write(f"[Pod {pod}]: {line}\n")
                sys.stdout.flush()
        texts = {pod: "\n".join(pod_lines) for pod, pod_lines in collected.items()}
        events = self._event_lines(name, namespace, job_kind) if verbose else {}
        return texts, events

    def iter_job_logs(
        self,
        name: str,
        namespace: str | None = None,
        job_kind: str | None = None,
        is_master: bool = False,
        replica_type: str | None = None,
        replica_index: int | None = None,
        follow: bool = False,
        container: str | None = None,
        *,
        timeout: float | None = None,
    ) -> Iterator[tuple[str, str]]:
        """``(pod name, line)`` of the selected pods; with ``follow``, as written, until the
        job has ended (trainop extension; ``get_job_logs`` and ``trainop logs`` use it)."""
        info = _info(job_kind or self.job_kind)
        ns = namespace or self.namespace
        selection = logs.Selection(
            job=name,
            namespace=ns,
            label_selector=pod_selector(name, is_master, replica_type, replica_index),
            container=container or info.default_container,
        )
        if follow:
            yield from self._loop.iterate(
                logs.follow_logs(self._http, job_resource(info), selection), timeout=timeout
            )
            return
        for pod, text in self._call(logs.read_logs(self._http, selection), timeout=timeout).items():
            for line in text.splitlines():
                yield pod, line

    def get_job_events(
        self, name: str, namespace: str | None = None, job_kind: str | None = None
    ) -> list[Obj]:
        """Events about the job and its pods, oldest first (trainop extension)."""
        ns = namespace or self.namespace
        kind = _info(job_kind or self.job_kind).kind
        pods = set(self.get_job_pod_names(name, ns))
        listed = self._call(self._http.list(EVENTS, namespace=ns))
        about = [
            event
            for event in listed.items
            if (
                (event.get("involvedObject") or {}).get("kind"),
                event["involvedObject"].get("name"),
            )
            in {(kind, name), *((constants.POD_KIND, pod) for pod in pods)}
        ]
        return sorted(about, key=_event_time)

    def _event_lines(
        self, name: str, namespace: str | None, job_kind: str | None
    ) -> dict[str, list[str]]:
        events: dict[str, list[str]] = {}
        for event in self.get_job_events(name, namespace, job_kind):
            involved = event["involvedObject"]
            key = f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"
            when = _event_time(event).replace("T", " ").rstrip("Z")[:19]
            events.setdefault(key, []).append(f"{when} {event.get('message', '')}")
        return events

    def get_job_podgroup(self, name: str, namespace: str | None = None) -> Obj | None:
        """The job's gang-scheduling PodGroup (Volcano or scheduler-plugins), if any."""
        for resource in (VOLCANO_PODGROUPS, COSCHEDULING_PODGROUPS):
            try:
                found: Obj = self._call(
                    self._http.get(resource, name=name, namespace=namespace or self.namespace)
                )
                return found
            except ApiError:
                continue  # not installed, or no group for this job
        return None

    # -- write -----------------------------------------------------------------------------

    def update_job(
        self,
        job: Job | Mapping[str, Any],
        name: str,
        namespace: str | None = None,
        job_kind: str | None = None,
    ) -> Job:
        """Merge-patch the job ``name`` with the whole of ``job``."""
        body = _wire(job)
        body.pop("status", None)
        resource = self._resource(job_kind)
        patched = self._call(
            self._http.patch(resource, name=name, patch=body, namespace=namespace or self.namespace)
        )
        return manifest.parse_job(patched)

    def delete_job(
        self,
        name: str,
        namespace: str | None = None,
        job_kind: str | None = None,
        delete_options: Mapping[str, Any] | Any | None = None,
    ) -> None:
        """Delete the job (``delete_options``: a dict or ``V1DeleteOptions``; only the
        propagation policy and the uid precondition are used)."""
        policy, uid = _delete_options(delete_options)
        self._call(
            self._http.delete(
                self._resource(job_kind),
                name=name,
                namespace=namespace or self.namespace,
                propagation_policy=policy,
                preconditions_uid=uid,
            )
        )
        log.info(
            "%s %s/%s has been deleted",
            self._resource(job_kind).kind,
            namespace or self.namespace,
            name,
        )

    def suspend_job(
        self, name: str, namespace: str | None = None, job_kind: str | None = None
    ) -> Job:
        """Set ``runPolicy.suspend``: the operator deletes the pods and keeps the job."""
        return self._set_suspend(name, namespace, job_kind, suspend=True)

    def resume_job(
        self, name: str, namespace: str | None = None, job_kind: str | None = None
    ) -> Job:
        """Clear ``runPolicy.suspend``: the operator recreates the pods."""
        return self._set_suspend(name, namespace, job_kind, suspend=False)

    def _set_suspend(
        self, name: str, namespace: str | None, job_kind: str | None, *, suspend: bool
    ) -> Job:
        patch = {"spec": {"runPolicy": {"suspend": suspend}}}
        resource = self._resource(job_kind)
        ns = namespace or self.namespace
        return manifest.parse_job(
            self._call(self._http.patch(resource, name=name, patch=patch, namespace=ns))
        )

    # -- plumbing --------------------------------------------------------------------------

    def call(self, coro: Any, *, timeout: float | None = TIMEOUT) -> Any:
        """Run a coroutine of ``http`` on this client's loop; its result (for the kinds this
        client does not model: the CLI's Trainer v2 verbs, ``cli/trainjobs.py``)."""
        return self._loop.call(coro, timeout=timeout)

    def iterate(self, source: AsyncIterator[Any]) -> Iterator[Any]:
        """The items of an async iterator over ``http``, as they arrive, on this client's loop."""
        return self._loop.iterate(source)

    @property
    def http(self) -> HttpClient:
        """The asynchronous client underneath, to be driven through ``call``."""
        return self._http

    def _resource(self, job_kind: str | None) -> Resource:
        return job_resource(_info(job_kind or self.job_kind))

    async def _get_raw(self, name: str, namespace: str | None, job_kind: str | None) -> Obj:
        return await self._http.get(
            self._resource(job_kind), name=name, namespace=namespace or self.namespace
        )

    def _call(self, coro: Any, *, timeout: float | None = TIMEOUT) -> Any:
        return self._loop.call(coro, timeout=timeout)


def _info(kind: str) -> KindInfo:
    try:
        return kind_info(kind)
    except UnknownKindError as exc:
        raise InvalidArgumentError(str(exc)) from exc


def pod_selector(
    name: str, is_master: bool, replica_type: str | None, replica_index: int | None
) -> str:
    """Upstream's label selector of a job's pods; ``replica_type`` must be lower-case."""
    selector = f"{constants.JOB_NAME_LABEL}={name}"
    if is_master:
        selector += f",{constants.JOB_ROLE_LABEL}={constants.JOB_ROLE_MASTER}"
    if replica_type is not None:
        if replica_type not in constants.REPLICA_TYPES:
            raise InvalidArgumentError(
                f"Job replica type must be one of {sorted(constants.REPLICA_TYPES)}, "
                f"got {replica_type!r}"
            )
        selector += f",{constants.REPLICA_TYPE_LABEL}={replica_type}"
    if replica_index is not None:
        selector += f",{constants.REPLICA_INDEX_LABEL}={replica_index}"
    return selector


def _wire(job: Job | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(job, Job):
        return manifest.dump_job(job)
    if isinstance(job, Mapping):
        return {str(key): _plain(value) for key, value in job.items()}
    raise InvalidArgumentError(
        f"`job` must be a job model or a manifest dict, got {type(job).__name__}"
    )


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _delete_options(options: Mapping[str, Any] | Any | None) -> tuple[str, str]:
    if options is None:
        return "Background", ""
    get = options.get if isinstance(options, Mapping) else lambda key: getattr(options, key, None)
    policy = get("propagationPolicy") or get("propagation_policy") or "Background"
    preconditions = get("preconditions") or {}
    uid = (
        preconditions.get("uid")
        if isinstance(preconditions, Mapping)
        else getattr(preconditions, "uid", "")
    )
    return str(policy), str(uid or "")


def _event_time(event: Obj) -> str:
    return str(
        event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def _host_python() -> str:
    return sys.executable
