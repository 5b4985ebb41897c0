"""JobSet's success policy (spec 2.7; golden case G9).

Matching Jobs are the succeeded current-attempt Jobs of the targeted replicatedJobs (none
named: all). ``Any`` needs one; ``All`` needs as many as the targeted replicatedJobs have
replicas. Met: ``Completed=True``, ``terminalState: Completed``, ``RestartingJobSet=False``
(when present). The still-active Jobs are deleted by the next pass.
"""

from __future__ import annotations

from collections.abc import Sequence

from trainop.cluster.controllers.jobset import keys
from trainop.cluster.controllers.jobset.conditions import Draft
from trainop.cluster.controllers.jobset.counts import labels_of
from trainop.cluster.controllers.jobset.spec import Raw, as_map, replicated_jobs, spec_of


def is_met(jobset: Raw, succeeded: Sequence[Raw]) -> bool:
    """Whether the succeeded current-attempt Jobs satisfy the success policy."""
    policy = as_map(spec_of(jobset).get("successPolicy"))
    targets = [str(t) for t in policy.get("targetReplicatedJobs") or []]
    wanted = [rj for rj in replicated_jobs(jobset) if not targets or rj.name in targets]
    names = {rj.name for rj in wanted}
    matching = sum(1 for job in succeeded if labels_of(job).get(keys.REPLICATED_JOB) in names)
    required = 1 if policy.get("operator") == "Any" else sum(rj.replicas for rj in wanted)
    return matching >= required


def complete(draft: Draft) -> None:
    """Mark the JobSet completed."""
    draft.conditions.set(keys.COMPLETED, True, keys.ALL_JOBS_COMPLETED)
    draft.conditions.set(keys.RESTARTING, False, keys.JOBSET_COMPLETED)
    draft.terminal = keys.COMPLETED
