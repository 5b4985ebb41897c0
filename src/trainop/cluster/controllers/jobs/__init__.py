"""batch/v1 Jobs as Kubernetes 1.36 runs them, in the local control plane (note 130).

Pure decisions, one concern per module: ``model`` (a Job's spec and its pods' facts),
``indexes`` (completion indexes and the pods to create or delete), ``pods`` (the pods
created), ``counting`` (each ended pod counted once), ``uncounted`` (kube's
``uncountedTerminatedPods`` record, which makes that hold across a crash), ``failure``
(podFailurePolicy, backoff limit, deadline, replacement back-off), ``conditions`` (interim,
terminal, Suspended) and ``step`` (one sync, combining them); ``controller`` applies a step
through the API.
"""

from trainop.cluster.controllers.jobs.controller import JOBS, LocalJobController

__all__ = ["JOBS", "LocalJobController"]
