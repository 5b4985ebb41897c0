"""Each job's defaulted spec, computed once per spec instead of once per plan (issue 24 item 2).

``api.defaults.apply_defaults`` was a fifth of a plan's CPU, and a job is planned about three
times while its spec stays the same (its own status writes and its pods' changes bring it
back). Defaulting reads the job's spec and kind only, so the defaulted spec is kept per uid
beside the raw spec it came from, and reused while the cached job's resourceVersion is the same
or its spec is equal to that one (a status write changes the resourceVersion, not the spec). A
hit returns a new job (the parsed one, with the cached defaulted spec): equal to what
``apply_defaults`` returns. The spec is shared between plans; the engine never mutates its
inputs (``engine.plan``), as with the informers' objects. At most ``limit`` jobs are kept,
the oldest entry dropped first.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainop.api.defaults import apply_defaults
from trainop.api.types import Job
from trainop.kube.client import Obj

DEFAULT_LIMIT = 20_000  # jobs; a job's entry is its raw spec (held by the informer anyway)


@dataclass(frozen=True, slots=True)
class _Entry:
    resource_version: str
    api_version: object
    raw_spec: object
    spec: object  # the defaulted spec (a ``JobSpec`` of the job's kind)


class DefaultsCache:
    """``defaulted(raw, job)``: ``apply_defaults(job)`` for the parsed ``raw``, memoised."""

    def __init__(self, *, limit: int = DEFAULT_LIMIT) -> None:
        self._entries: dict[str, _Entry] = {}
        self._limit = limit
        self.hits = 0
        self.misses = 0

    def defaulted(self, raw: Obj, job: Job) -> Job:
        meta = raw.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        version = str(meta.get("resourceVersion") or "")
        raw_spec, api_version = raw.get("spec"), raw.get("apiVersion")
        entry = self._entries.get(uid) if uid else None
        if entry is not None and entry.api_version == api_version:
            same = entry.resource_version == version if version else False
            if same or entry.raw_spec is raw_spec or entry.raw_spec == raw_spec:
                self.hits += 1
                return job.model_copy(update={"spec": entry.spec})
        self.misses += 1
        result = apply_defaults(job)
        if uid:
            self._entries.pop(uid, None)
            if len(self._entries) >= self._limit:
                del self._entries[next(iter(self._entries))]
            self._entries[uid] = _Entry(version, api_version, raw_spec, result.spec)
        return result

    def forget(self, uid: str) -> None:
        """Drop a job's entry (the job is gone)."""
        self._entries.pop(uid, None)

    def __len__(self) -> int:
        return len(self._entries)
