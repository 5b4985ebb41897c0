"""What a framework plugin is: a frozen spec plus small capability protocols.

A ``Framework`` references the API layer's ``KindInfo`` (never restating its names, ports or
defaults) and adds behaviour: the ordered ``primary`` replica-type preference (which type drives
Running/Succeeded and carries ``job-role: master``; it replaces upstream's ``IsMasterRole``),
an ``env`` rule, and optional capabilities: ``succeeded`` (an extra success rule),
``tolerates_failure``, ``validate``, ``extra_objects`` (the elastic HPA), ``decorate_pod``
(init containers, labels) and, as data the engine renders, ``config_files`` (files in a
ConfigMap, mounted) and ``exec_access`` (replicas that exec into their peers). A job run in
phases declares them as data too: ``derive_replicas`` (replica types built from the others),
``starts_after`` (types created only once another type succeeded), ``running_types`` and
``stages`` (Normal events as the job moves on). The engine (``trainop.engine``) does
everything else once for every kind.

Invariants: plugins are pure functions of their arguments; they never mutate a mapping they are
given and never do I/O. Neighbours: ``topology`` (addresses), ``registry`` (kind → plugin).
"""

from __future__ import annotations

import re
from collections.abc import Mapping as AbstractMapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol

from trainop.api import validation
from trainop.api.kinds import KindInfo
from trainop.api.types import Job, ReplicaSpec
from trainop.frameworks.options import FrameworkOptions as FrameworkOptions  # plugins' contract
from trainop.frameworks.topology import Topology, replica_name

Wire = dict[str, Any]
EnvTarget = Literal["all", "default", "first"]


@dataclass(frozen=True, slots=True)
class Replica:
    """One replica of a job: its type (spec map key casing) and index (None: unindexed)."""

    type: str
    index: int | None

    @property
    def position(self) -> int:
        return self.index or 0


@dataclass(frozen=True, slots=True)
class EnvVar:
    """One container environment variable: a literal value or a pod field reference."""

    name: str
    value: str = ""
    field_path: str | None = None

    def to_wire(self) -> Wire:
        if self.field_path is not None:
            return {"name": self.name, "valueFrom": {"fieldRef": {"fieldPath": self.field_path}}}
        return {"name": self.name, "value": self.value}


@dataclass(frozen=True, slots=True)
class Messages:
    """Condition message templates; fields: kind, name, namespace, count, rtype.

    The ``worker_*`` forms are used when the driving replica type is ``Worker``.
    """

    running: str = "{kind} {name} is running."
    succeeded: str = "{kind} {name} is successfully completed."
    worker_running: str = "{kind} {namespace}/{name} is running."
    worker_succeeded: str = "{kind} {namespace}/{name} successfully completed."
    # Upstream's common pod logic, the same for every kind: a failed pod was deleted for restart.
    restarting: str = "job {name} is restarting because {rtype} replica(s) failed."
    failed: str = "{kind} {name} is failed because {count} {rtype} replica(s) failed."
    # Upstream's common pod logic, the same for every kind: a replica whose restartPolicy is
    # ExitCode exited with a permanent code (below 128).
    failing_exit_code: str = 'job "{name}" is failing because "{rtype}" replica(s) failed.'


@dataclass(frozen=True, slots=True)
class PodWording:
    """Events about one replica type's pods that a kind words its own way (upstream's MPI
    controller): reason and message (``{name}``) of a creation, reason and message
    (``{error}``) of a failed one, the reason of the warning that the template's
    ``restartPolicy`` is overridden (None: no warning) and of the warning that the template
    names another scheduler than the gang scheduler."""

    created: tuple[str, str] = ("SuccessfulCreatePod", "Created pod: {name}")
    create_failed: tuple[str, str] = ("FailedCreatePod", "Error creating: {error}")
    restart_policy_warning: str | None = "SetPodTemplateRestartPolicy"
    scheduler_name_warning: str = "SetPodTemplateSchedulerName"


@dataclass(frozen=True, slots=True)
class PodOutcome:
    """What a success rule may know about one observed pod."""

    replica: Replica
    phase: str
    exit_code: int | None


class EnvRule(Protocol):
    def __call__(
        self, *, job: Job, replica: Replica, topology: Topology, options: FrameworkOptions
    ) -> tuple[EnvVar, ...]:
        """Env vars appended to the replica's containers; peers addressed through ``topology``,
        operator-wide settings (local or cluster values) in ``options``."""
        ...


class SuccessRule(Protocol):
    def __call__(self, *, job: Job, pods: tuple[PodOutcome, ...]) -> bool:
        """True when the job succeeded by a rule beyond "the primary type all succeeded"."""
        ...


class FailureTolerance(Protocol):
    def __call__(self, *, job: Job, replica_type: str) -> bool:
        """True when failed pods of ``replica_type`` do not fail the job."""
        ...


class Validator(Protocol):
    def __call__(self, *, job: Job) -> tuple[str, ...]:
        """Problems that stop the engine from acting on the (defaulted) job."""
        ...


class JobFilter(Protocol):
    def __call__(self, *, job: Job) -> bool:
        """True when this plugin reconciles ``job``; a job of the kind it does not handle has
        another plugin's semantics (another API version of one CRD) and is left alone."""
        ...


class ExtraObjects(Protocol):
    def __call__(
        self, *, job: Job, running_pods: frozenset[str], options: FrameworkOptions
    ) -> tuple[Wire, ...]:
        """Objects besides pods and services the job needs (apiVersion, kind, metadata.name,
        body). ``running_pods`` names the job's pods in phase Running."""
        ...


class PodDecorator(Protocol):
    def __call__(self, *, job: Job, replica: Replica, pod: Wire, options: FrameworkOptions) -> Wire:
        """``pod`` with the framework's additions (init containers, volumes).

        ``pod`` is the caller's own body, built for this call and shared with nothing
        (``desired.pod`` deep-copies the template): the decorator may edit it in place and
        return it. Copying it again cost a full deep copy per pod (docs/benchmarks.md).
        Additions must be fresh objects, never module-level ones shared between pods."""
        ...


@dataclass(frozen=True, slots=True)
class Peers:
    """What was observed of a job's live pods, for files that name them: the pods in phase
    Running, and each pod's IP (``status.podIP``) once its kubelet reported one."""

    running: frozenset[str] = frozenset()
    ips: AbstractMapping[str, str] = field(default_factory=dict)


class FilesRule(Protocol):
    def __call__(
        self, *, job: Job, peers: Peers, topology: Topology, options: FrameworkOptions
    ) -> dict[str, str]:
        """The contents of the job's files by file name (the ConfigMap's data); peers are
        addressed through ``topology`` (``topology.ip_address`` where an IP is needed)."""
        ...


class ReplicaDeriver(Protocol):
    def __call__(self, *, job: Job) -> dict[str, ReplicaSpec]:
        """Replica specs built from the (defaulted) job's own, by type; the engine plans with
        them added (DGL's Partitioner: the Worker template running the Launcher's command)."""
        ...


@dataclass(frozen=True, slots=True)
class ConfigFiles:
    """Files the replicas read (MPI's hostfile and scripts): the engine keeps ``render``'s
    files in the ConfigMap ``<job>-config`` and mounts, in the first container of each replica
    type in ``items``, those files (with their modes) as volume ``volume`` at ``mount_path``."""

    KINDS: ClassVar[tuple[tuple[str, str], ...]] = (("v1", "ConfigMap"),)

    render: FilesRule
    volume: str
    mount_path: str
    items: AbstractMapping[str, tuple[tuple[str, int], ...]]
    # Replica type -> the type whose pods' addresses its files list (DGL: the launcher's
    # hostfile lists the workers'). Where pods do not see file updates
    # (``FrameworkOptions.pods_see_file_updates``) the engine creates the former's pods only
    # once every pod of the latter started with an IP, so that they start with complete files.
    waits_for: AbstractMapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExecAccess:
    """Replica type ``source`` starts processes in the pods of ``target`` through the API
    (``kubectl exec``: the MPI launcher). The engine runs its pods as a ServiceAccount (the
    template's, else ``<job>-<source>``; one that exists is used as it is, never reported as
    foreign) and grants it exec into those pods only (a Role and RoleBinding)."""

    KINDS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("v1", "ServiceAccount"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    )

    source: str
    target: str


@dataclass(frozen=True, slots=True)
class Stage:
    """A step of a job's progress, announced once by a Normal event ``<Kind><name>`` with
    ``message`` (``{kind}``, ``{name}``) when every replica of the ``started`` types is Running
    or Succeeded and every replica of the ``succeeded`` types Succeeded. Types the job lacks
    are left out; a stage with none of its types in the job is never reached."""

    name: str
    message: str
    started: tuple[str, ...] = ()
    succeeded: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SshKeys:
    """A job's SSH key pair (PEM private key, OpenSSH authorized-keys line), for replicas that
    reach each other over ssh. An input: generating one is random, so the controller does it."""

    private_pem: str
    public_line: str


@dataclass(frozen=True, slots=True)
class Framework:
    """One framework plugin: API facts by reference, plus its behaviour."""

    info: KindInfo
    primary: tuple[str, ...]
    env: EnvRule
    env_containers: EnvTarget = "all"
    messages: Messages = field(default_factory=Messages)
    succeeded: SuccessRule | None = None
    tolerates_failure: FailureTolerance | None = None
    validate: Validator | None = None
    handles: JobFilter | None = None
    extra_objects: ExtraObjects | None = None
    decorate_pod: PodDecorator | None = None
    config_files: ConfigFiles | None = None
    exec_access: tuple[ExecAccess, ...] = ()
    # A label whose value is the job's name, on every extra object (upstream MPI's ``app``).
    name_label: str | None = None
    creates_services: bool = True
    # Replica types with a single, unindexed pod (MPI launcher: ``<job>-launcher``).
    unindexed_types: tuple[str, ...] = ()
    # Order in which replica types' pods are created (default: the kind's type order).
    creation_order: tuple[str, ...] = ()
    # Whether suspending the job deletes its extra objects (the elastic HPA) too.
    deletes_extras_on_suspend: bool = False
    # (apiVersion, kind) of every object ``extra_objects`` may create (see ``extra_kinds``).
    extra_object_kinds: tuple[tuple[str, str], ...] = ()
    # Replica types whose pod events are worded differently (default: ``PodWording()``).
    pod_wording: AbstractMapping[str, PodWording] = field(default_factory=dict)
    # Replica types whose Services the engine creates (empty: every type, if any).
    service_types: tuple[str, ...] = ()
    # Phases: types whose pods and Services are created only once every replica of another
    # type Succeeded (type -> that type), types derived from the others, types whose running
    # pods make the job Running besides the primary one, and the stages announced on the way.
    starts_after: AbstractMapping[str, str] = field(default_factory=dict)
    derive_replicas: ReplicaDeriver | None = None
    running_types: tuple[str, ...] = ()
    stages: tuple[Stage, ...] = ()

    @property
    def kind(self) -> str:
        return self.info.kind

    @property
    def extra_kinds(self) -> tuple[tuple[str, str], ...]:
        """(apiVersion, kind) of every object besides pods and Services the engine may create
        for this kind (the capabilities' and ``extra_objects``'), which the controller watches."""
        files = ConfigFiles.KINDS if self.config_files is not None else ()
        access = ExecAccess.KINDS if self.exec_access else ()
        return (*files, *access, *self.extra_object_kinds)

    def primary_type(self, job: Job) -> str | None:
        """The replica type that drives Running/Succeeded: the first preference present."""
        return next((rt for rt in self.primary if rt in job.spec.replica_specs), None)


def replicas_of(job: Job, replica_type: str) -> int:
    """Replica count of a type (0 when absent; defaults make it non-None otherwise)."""
    spec = job.spec.replica_specs.get(replica_type)
    if spec is None:
        return 0
    return 1 if spec.replicas is None else spec.replicas


def total_replicas(job: Job) -> int:
    """Sum of replicas over every replica type of the job."""
    return sum(replicas_of(job, rt) for rt in job.spec.replica_specs)


def containers_of(pod: AbstractMapping[str, Any], *, init: bool = False) -> list[Wire]:
    """The (init) containers of a pod or template mapping; empty when absent or malformed."""
    spec = pod.get("spec")
    found = spec.get("initContainers" if init else "containers") if isinstance(spec, dict) else None
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def first_container(pod: AbstractMapping[str, Any]) -> Wire:
    """The first container of a pod or template mapping (a detached ``{}`` when it has none)."""
    return (containers_of(pod) or [{}])[0]


_QUANTITY = re.compile(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?")
_UNITS = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15}
_UNITS |= {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}


def quantity_bytes(value: object) -> int | None:
    """A byte quantity (``20Gi``, ``512M``, ``1000``) as a whole number; None when it is not one."""
    found = _QUANTITY.fullmatch(str(value)) if value is not None else None
    return int(float(found[1]) * _UNITS.get(found[2] or "", 1)) if found else None


def editable(pod: Wire) -> Wire:
    """``pod`` itself with ``spec`` present: a decorator's own body to edit (``PodDecorator``)."""
    pod.setdefault("spec", {})
    return pod


def replica_name_of(job: Job, replica_type: str, index: int | None) -> str:
    """The pod name of a replica of ``job`` (see ``topology.replica_name``)."""
    return replica_name(job_name=job.metadata.name or "", replica_type=replica_type, index=index)


def replica_names_of(job: Job, replica_type: str) -> list[str]:
    """The pod names of every indexed replica of ``replica_type``, by index."""
    return [replica_name_of(job, replica_type, i) for i in range(replicas_of(job, replica_type))]


def append_to(mapping: Wire, key: str, items: list[Any]) -> None:
    """Append ``items`` to the list at ``mapping[key]`` (created when absent); for decorators
    working on their own copy."""
    mapping[key] = [*(mapping.get(key) or []), *items]


def api_validation_errors(*, job: Job) -> tuple[str, ...]:
    """A ``Validator`` that applies the API layer's rules, for kinds upstream validates in the
    controller rather than in an admission webhook (MPIJob, spec 3.2)."""
    return tuple(str(error) for error in validation.validate(job).errors)
