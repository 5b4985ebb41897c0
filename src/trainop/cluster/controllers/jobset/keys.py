"""The strings JobSet v0.12.0 puts on the wire: label and annotation keys, condition types,
reasons and messages, event reasons (spec sections 1.8, 2.3, 2.16).

Data only; every other module of the package spells these names through here.
"""

from __future__ import annotations

from trainop.api.trainer import constants as c

GROUP = c.JOBSET_GROUP
API_VERSION = c.JOBSET_API_VERSION
KIND = c.JOBSET
CONTROLLER_NAME = "jobset.sigs.k8s.io/jobset-controller"  # the only managedBy reconciled
REPORTER = "jobset"  # the events' reporting component

_P = "jobset.sigs.k8s.io/"
JOBSET_NAME = c.JOBSET_NAME_LABEL
JOBSET_UID = _P + "jobset-uid"
REPLICATED_JOB = c.JOBSET_REPLICATED_JOB_LABEL
RESTART_ATTEMPT = _P + "restart-attempt"
REPLICATED_JOB_REPLICAS = _P + "replicatedjob-replicas"
GLOBAL_REPLICAS = _P + "global-replicas"
JOB_INDEX = c.JOBSET_JOB_INDEX_LABEL
JOB_KEY = _P + "job-key"
JOB_GLOBAL_INDEX = _P + "job-global-index"
GROUP_NAME = _P + "group-name"
GROUP_REPLICAS = _P + "group-replicas"
JOB_GROUP_INDEX = _P + "job-group-index"
COORDINATOR = _P + "coordinator"
EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
NODE_SELECTOR_STRATEGY = "alpha.jobset.sigs.k8s.io/node-selector"

# Condition types.
COMPLETED = c.JOBSET_CONDITION_COMPLETED
FAILED = c.JOBSET_CONDITION_FAILED
SUSPENDED = "Suspended"
RESTARTING = "RestartingJobSet"
STARTUP_IN_PROGRESS = "StartupPolicyInProgress"
STARTUP_COMPLETED = "StartupPolicyCompleted"

# (reason, message) pairs; "{job}" is the first failed Job's name.
ALL_JOBS_COMPLETED = ("AllJobsCompleted", "jobset completed successfully")
FAILED_JOBS = (
    "FailedJobs",
    "jobset failed due to one or more job failures (first failed job: {job})",
)
FAIL_ACTION = (
    "FailJobSetFailurePolicyAction",
    "applying FailJobSet failure policy action (first failed job: {job})",
)
MAX_RESTARTS = (
    "ReachedMaxRestarts",
    "jobset failed due to reaching max number of restarts (first failed job: {job})",
)
RESTART_MESSAGE = "applying {action} failure policy action (first failed job: {job})"
DEFAULT_POLICY_REASON = "DefaultFailurePolicy"
RULE_REASON_PREFIX = "FailurePolicy_"
JOBS_READY = ("JobsReady", "all jobs are ready")
JOBSET_FAILED = ("JobSetFailed", "jobset failed")
JOBSET_COMPLETED = ("JobSetCompleted", "jobset completed successfully")
JOBSET_SUSPENDED = ("JobSetSuspended", "jobset is suspended")
SUSPENDED_JOBS = ("SuspendedJobs", "jobset is suspended")
RESUME_JOBS = ("ResumeJobs", "jobset is resumed")
IN_ORDER_IN_PROGRESS = ("InOrderStartupPolicyInProgress", "in order startup policy is in progress")
IN_ORDER_COMPLETED = ("InOrderStartupPolicyCompleted", "in order startup policy has completed")

# Failure-policy actions.
FAIL_JOBSET = "FailJobSet"
RESTART_JOBSET = "RestartJobSet"
RESTART_IGNORE_MAX = "RestartJobSetAndIgnoreMaxRestarts"

# Event reasons beyond the conditions'.
EVENT_RESTART = {
    RESTART_JOBSET: "RestartJobSetFailurePolicyAction",
    RESTART_IGNORE_MAX: "RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction",
}
JOB_CREATION_FAILED = "JobCreationFailed"
SERVICE_CREATION_FAILED = "HeadlessServiceCreationFailed"
NORMAL, WARNING = "Normal", "Warning"
