"""Names of Kubeflow Trainer v2 (``trainer.kubeflow.org/v1alpha1``, release v2.3.0), as data.

Every string here is one the wire, the SDK or upstream's controller spells exactly this way:
the API group and kinds, the label and annotation keys, the job and container names of a
runtime's template, the reserved env names, condition types, reasons and messages, and the
JobSet (``jobset.x-k8s.io/v1alpha2``) coordinates the runtime template embeds. The planner,
the controller and the converter import them from here; nothing else spells them.
"""

from __future__ import annotations

GROUP = "trainer.kubeflow.org"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"

TRAINJOB = "TrainJob"
TRAINING_RUNTIME = "TrainingRuntime"
CLUSTER_TRAINING_RUNTIME = "ClusterTrainingRuntime"
RUNTIME_KINDS = (TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME)
KINDS = (TRAINJOB, TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME)
PLURALS = {
    TRAINJOB: "trainjobs",
    TRAINING_RUNTIME: "trainingruntimes",
    CLUSTER_TRAINING_RUNTIME: "clustertrainingruntimes",
}
# Registry keys of the runtime kinds: ``<Kind>.<group>`` (Go's GroupKind.String()).
RUNTIME_KEYS = tuple(f"{kind}.{GROUP}" for kind in RUNTIME_KINDS)

# managedBy values.
MANAGED_BY_TRAINER = "trainer.kubeflow.org/trainjob-controller"
MANAGED_BY_MULTIKUEUE = "kueue.x-k8s.io/multikueue"
MANAGED_BY_VALUES = (MANAGED_BY_TRAINER, MANAGED_BY_MULTIKUEUE)

# Labels and annotations.
LABEL_ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
ANCESTOR_TRAINER = "trainer"
ANCESTOR_DATASET_INITIALIZER = "dataset-initializer"
ANCESTOR_MODEL_INITIALIZER = "model-initializer"
ANCESTORS = (ANCESTOR_TRAINER, ANCESTOR_DATASET_INITIALIZER, ANCESTOR_MODEL_INITIALIZER)
LABEL_FRAMEWORK = "trainer.kubeflow.org/framework"
LABEL_SUPPORT = "trainer.kubeflow.org/support"
SUPPORT_DEPRECATED = "deprecated"
LABEL_WEBHOOK_VALIDATION = "trainer.kubeflow.org/webhook-validation"
WEBHOOK_VALIDATION_DISABLED = "disabled"
LABEL_MANAGED_BY = "trainer.kubeflow.org/managed-by"
MANAGED_BY_RUNTIMES_INSTALLER = "runtimes-installer"
LEGACY_RUNTIME_FINALIZER = "trainer.kubeflow.org/resource-in-use"
# runtimePatches managers of the SDK and of Kueue.
SDK_MANAGER = "trainer.kubeflow.org/kubeflow-sdk"
KUEUE_MANAGER = "kueue.x-k8s.io/manager"

# Jobs and containers of a runtime's JobSet template.
NODE = "node"  # the trainer job and its main container
LAUNCHER = "launcher"  # the MPI launcher job (its container is also ``node``)
DATASET_INITIALIZER = "dataset-initializer"
MODEL_INITIALIZER = "model-initializer"
INITIALIZER_VOLUME = "initializer"
STORAGE_URI_ENV = "STORAGE_URI"
DATASET_MOUNT_PATH = "/workspace/dataset"
MODEL_MOUNT_PATH = "/workspace/model"
# The container each ancestor's pod must contain (runtime validator, spec section 6.1).
ANCESTOR_CONTAINERS = {
    ANCESTOR_TRAINER: NODE,
    ANCESTOR_DATASET_INITIALIZER: DATASET_INITIALIZER,
    ANCESTOR_MODEL_INITIALIZER: MODEL_INITIALIZER,
}
# Containers whose env a runtimePatch may not set.
ENV_PROTECTED_CONTAINERS = (DATASET_INITIALIZER, MODEL_INITIALIZER, NODE)
TRAINER_PORT = 29500
COMPLETION_INDEX_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']"

# Reserved env names per framework (a TrainJob's trainer.env may not set them).
TORCH_ENV = (
    "PET_NNODES",
    "PET_NPROC_PER_NODE",
    "PET_NODE_RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
)
MPI_ENV = (
    "OMPI_MCA_orte_default_hostfile",
    "OMPI_MCA_orte_keep_fqdn_hostnames",
    "OMPI_MCA_orte_set_default_slots",
    "OMPI_MCA_plm_rsh_args",
)
XGBOOST_ENV = ("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER")
JAX_ENV = ("JAX_NUM_PROCESSES", "JAX_PROCESS_ID", "JAX_COORDINATOR_ADDRESS")

# MPI policy values.
MPI_OPENMPI = "OpenMPI"
MPI_INTEL = "Intel"  # declared upstream, refused by the CRD enum
MPI_MPICH = "MPICH"  # declared upstream, refused by the CRD enum
MPI_IMPLEMENTATIONS = (MPI_OPENMPI, "")
DEFAULT_SSH_AUTH_MOUNT_PATH = "/root/.ssh"

# TrainJob condition types, reasons and messages (spec section 1.4).
CONDITION_SUSPENDED = "Suspended"
CONDITION_COMPLETE = "Complete"
CONDITION_FAILED = "Failed"
REASON_SUSPENDED = "Suspended"
REASON_RESUMED = "Resumed"
REASON_DEADLINE_EXCEEDED = "DeadlineExceeded"
REASON_RUNTIME_NOT_SUPPORTED = "TrainingRuntimeNotSupported"
MESSAGE_SUSPENDED = "TrainJob is suspended"
MESSAGE_RESUMED = "TrainJob is resumed"
MESSAGE_DEADLINE_EXCEEDED = "TrainJob exceeded its active deadline"
UNSUPPORTED_RUNTIME_PREFIX = "unsupported runtime: "
EVENT_REASON_CREATION_FAILED = "TrainJobResourcesCreationFailed"

# Runtime snapshot ConfigMap (spec section 2.3).
SNAPSHOT_SUFFIX = "-runtime-snapshot"
SNAPSHOT_DATA_KEY = "runtime"

# Public ConfigMap the SDK reads (spec section 4, 5.1).
PUBLIC_CONFIGMAP = "kubeflow-trainer-public"
PUBLIC_VERSION_KEY = "kubeflow_trainer_version"
RELEASE = "v2.3.0"
SYSTEM_NAMESPACE = "kubeflow-system"

DEPRECATION_POLICY_URL = (
    "https://trainer.kubeflow.org/en/latest/operator-guides/runtime.html#runtime-deprecation-policy"
)

# JobSet (jobset.x-k8s.io/v1alpha2, release v0.12.0).
JOBSET_GROUP = "jobset.x-k8s.io"
JOBSET_VERSION = "v1alpha2"
JOBSET_API_VERSION = f"{JOBSET_GROUP}/{JOBSET_VERSION}"
JOBSET = "JobSet"
JOBSET_PLURAL = "jobsets"
JOBSET_CRD_NAME = f"{JOBSET_PLURAL}.{JOBSET_GROUP}"
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
JOBSET_REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOBSET_JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
JOBSET_CONDITION_COMPLETED = "Completed"
JOBSET_CONDITION_FAILED = "Failed"

# Scheduler integration (spec section 2.9).
COSCHEDULING_POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
