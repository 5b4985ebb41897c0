"""Per-kind API facts of kubeflow.org/v1, as data: one ``KindInfo`` per job kind.

These are the facts the API layer itself needs (names, the replica-spec wire field, replica
types, the defaults of spec section 2, the replica-count rules of section 3). Framework plugins
(``trainop.frameworks``) build on them and add behaviour; they never restate these values.
Look kinds up with ``kind_info``; never branch on a kind's name.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from trainop.api import jobs, mpi_v2beta1
from trainop.api.types import CleanPodPolicy, Job, RestartPolicy
from trainop.errors import UnknownKindError


@dataclass(frozen=True, slots=True)
class OtherVersion:
    """A further API version the kind's CRD serves beside v1 (not stored; conversion None)."""

    name: str
    model: type[BaseModel]


@dataclass(frozen=True, slots=True)
class KindInfo:
    """Everything the API layer knows about one job kind."""

    kind: str
    plural: str
    replica_specs_field: str
    replica_types: tuple[str, ...]
    default_container: str
    default_port_name: str
    default_port: int
    default_restart_policy: RestartPolicy
    controller_name: str
    framework: str
    model: type[Job]
    # Replica-type keys that are case-normalised to their canonical spelling (MPI: none).
    normalized_types: tuple[str, ...] = ()
    # Replica types that default to 0 replicas instead of 1.
    zero_default_types: tuple[str, ...] = ()
    # Types that must be present, types whose replicas must be exactly 1 when present, and
    # types whose replicas must be at least 1 when set.
    required_types: tuple[str, ...] = ()
    single_replica_types: tuple[str, ...] = ()
    positive_replica_types: tuple[str, ...] = ()
    # Whether the default port is appended to the default container (all but MPI).
    inserts_default_port: bool = True
    # Whether a container named ``default_container`` is required in every replica type.
    requires_default_container: bool = True
    # Whether the CRD has a scale subresource over the Worker replicas.
    has_scale: bool = False
    # Whether the CRD lists the Age printer column before State (upstream's MPIJob does).
    age_column_first: bool = False
    # Versions served besides v1 by the same CRD (MPIJob: v2beta1, design note 100).
    other_versions: tuple[OtherVersion, ...] = ()
    # ``runPolicy.cleanPodPolicy`` when neither it nor a deprecated copy is set.
    default_clean_pod_policy: CleanPodPolicy = "None"
    # Replica types the operator derives from the others (DGLJob's Partitioner): a user may
    # name one (replicas only), never give it a template.
    derived_types: tuple[str, ...] = ()

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.kubeflow.org"


TFJOB = KindInfo(
    kind="TFJob",
    plural="tfjobs",
    replica_specs_field="tfReplicaSpecs",
    replica_types=("PS", "Worker", "Chief", "Master", "Evaluator"),
    normalized_types=("PS", "Worker", "Chief", "Master", "Evaluator"),
    default_container="tensorflow",
    default_port_name="tfjob-port",
    default_port=2222,
    default_restart_policy="Never",
    controller_name="tfjob-controller",
    framework="tensorflow",
    model=jobs.TFJob,
)
PYTORCHJOB = KindInfo(
    kind="PyTorchJob",
    plural="pytorchjobs",
    replica_specs_field="pytorchReplicaSpecs",
    replica_types=("Master", "Worker"),
    normalized_types=("Master", "Worker"),
    default_container="pytorch",
    default_port_name="pytorchjob-port",
    default_port=23456,
    default_restart_policy="OnFailure",
    controller_name="pytorchjob-controller",
    framework="pytorch",
    model=jobs.PyTorchJob,
    single_replica_types=("Master",),
    positive_replica_types=("Worker",),
    has_scale=True,
)
XGBOOSTJOB = KindInfo(
    kind="XGBoostJob",
    plural="xgboostjobs",
    replica_specs_field="xgbReplicaSpecs",
    replica_types=("Master", "Worker"),
    normalized_types=("Master", "Worker"),
    default_container="xgboost",
    default_port_name="xgboostjob-port",
    default_port=9999,
    default_restart_policy="Never",
    controller_name="xgboostjob-controller",
    framework="xgboost",
    model=jobs.XGBoostJob,
    required_types=("Master",),
    single_replica_types=("Master",),
)
MPIJOB = KindInfo(
    kind="MPIJob",
    plural="mpijobs",
    replica_specs_field="mpiReplicaSpecs",
    replica_types=("Launcher", "Worker"),
    default_container="mpi",
    default_port_name="mpi-port",
    default_port=9999,
    default_restart_policy="Never",
    controller_name="mpijob-controller",
    framework="mpi",
    model=jobs.MPIJob,
    zero_default_types=("Worker",),
    required_types=("Launcher",),
    single_replica_types=("Launcher",),
    inserts_default_port=False,
    requires_default_container=False,
    age_column_first=True,
    other_versions=(OtherVersion(mpi_v2beta1.VERSION, mpi_v2beta1.MPIJobV2Beta1),),
)
PADDLEJOB = KindInfo(
    kind="PaddleJob",
    plural="paddlejobs",
    replica_specs_field="paddleReplicaSpecs",
    replica_types=("Master", "Worker"),
    normalized_types=("Master", "Worker"),
    default_container="paddle",
    default_port_name="master",
    default_port=36543,
    default_restart_policy="OnFailure",
    controller_name="paddlejob-controller",
    framework="paddle",
    model=jobs.PaddleJob,
    has_scale=True,
)
JAXJOB = KindInfo(
    kind="JAXJob",
    plural="jaxjobs",
    replica_specs_field="jaxReplicaSpecs",
    replica_types=("Worker",),
    normalized_types=("Worker",),
    default_container="jax",
    default_port_name="jaxjob-port",
    default_port=6666,
    default_restart_policy="Never",
    controller_name="jaxjob-controller",
    framework="jax",
    model=jobs.JAXJob,
    has_scale=True,
)
MXJOB = KindInfo(
    kind="MXJob",
    plural="mxjobs",
    replica_specs_field="mxReplicaSpecs",
    replica_types=("Scheduler", "Server", "Worker", "TunerTracker", "TunerServer", "Tuner"),
    normalized_types=("Scheduler", "Server", "Worker"),
    default_container="mxnet",
    default_port_name="mxjob-port",
    default_port=9091,
    default_restart_policy="Never",
    controller_name="mxjob-controller",
    framework="mxnet",
    model=jobs.MXJob,
    single_replica_types=("Scheduler",),
)

DGLJOB = KindInfo(
    kind="DGLJob",
    plural="dgljobs",
    replica_specs_field="dglReplicaSpecs",
    replica_types=("Launcher", "Worker", "Partitioner"),
    default_container="dgl",
    default_port_name="dglserver",
    default_port=30050,
    default_restart_policy="Never",
    controller_name="dgljob-controller",
    framework="dgl",
    model=jobs.DGLJob,
    required_types=("Launcher",),
    single_replica_types=("Launcher", "Partitioner"),
    inserts_default_port=False,
    requires_default_container=False,
    # Idle workers (``sleep``) would otherwise outlive the job (the Qihoo operator's default).
    default_clean_pod_policy="Running",
    derived_types=("Partitioner",),
)

KINDS: tuple[KindInfo, ...] = (
    TFJOB, PYTORCHJOB, XGBOOSTJOB, MPIJOB, PADDLEJOB, JAXJOB, MXJOB, DGLJOB
)  # fmt: skip
_BY_KIND = {info.kind: info for info in KINDS}
_BY_NAME = {name: info for info in KINDS for name in (info.kind.lower(), info.plural)}


def kind_info(kind: str) -> KindInfo:
    """The facts of ``kind`` (exact ``kind`` spelling, or its lower-case singular or plural)."""
    info = _BY_KIND.get(kind) or _BY_NAME.get(kind.lower())
    if info is None:
        known = ", ".join(i.kind for i in KINDS)
        raise UnknownKindError(f"unknown job kind {kind!r}; expected one of {known}")
    return info


def info_of(job: Job) -> KindInfo:
    """The facts of the kind of ``job``."""
    return kind_info(job.kind)
