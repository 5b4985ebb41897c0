"""kube-scheduler's volume checks for one node, pure: a pod waits until its claims can be used.

What the ``VolumeBinding`` and ``VolumeRestrictions`` plugins refuse, with their messages in
the one-node FitError form ``scheduling`` uses (``0/1 nodes are available: ...``):

- a claim that does not exist: ``persistentvolumeclaim "<name>" not found``;
- a claim being deleted: ``persistentvolumeclaim "<name>" is being deleted``;
- a claim not bound yet: ``pod has unbound immediate PersistentVolumeClaims`` (the local
  provisioner binds claims as soon as they are created, whatever the class's
  ``volumeBindingMode``: note 132);
- a ``ReadWriteOncePod`` claim that another pod holds (bound and not finished, or chosen
  earlier in this pass): ``1 node has pod using PersistentVolumeClaim with the same name and
  ReadWriteOncePod access mode``. ``ReadWriteOnce``, ``ReadOnlyMany`` and ``ReadWriteMany``
  allow any number of pods on one node, as they do on a cluster's node.

``problems`` answers, for each pending pod that may not be bound yet, its message.
Neighbours: ``scheduling.decide`` (holds those pods back), ``scheduler`` (watches claims).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Obj = Mapping[str, Any]
PodKey = tuple[str, str]  # namespace, name
UNBOUND = "pod has unbound immediate PersistentVolumeClaims"
ONE_POD = (
    "1 node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
_TERMINAL = ("Succeeded", "Failed")


def _key(obj: Obj) -> PodKey:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or "default"), str(meta.get("name") or ""))


def claim_names(pod: Obj) -> list[str]:
    """The claims the pod's volumes name, in order."""
    volumes = (pod.get("spec") or {}).get("volumes") or []
    sources = [v.get("persistentVolumeClaim") for v in volumes if isinstance(v, Mapping)]
    return [str(s["claimName"]) for s in sources if isinstance(s, Mapping) and s.get("claimName")]


def _holds(pod: Obj) -> bool:
    bound = bool((pod.get("spec") or {}).get("nodeName"))
    return bound and (pod.get("status") or {}).get("phase") not in _TERMINAL


def problems(
    pending: Iterable[Obj], every: Iterable[Obj], claims: Mapping[PodKey, Obj]
) -> dict[PodKey, str]:
    """The message of each ``pending`` pod (in scheduling order) whose claims keep it from
    being bound; ``every`` is every pod known (those bound hold their claims)."""
    held: set[PodKey] = set()
    for pod in every:
        if _holds(pod):
            namespace = _key(pod)[0]
            held.update((namespace, name) for name in claim_names(pod))
    found: dict[PodKey, str] = {}
    for pod in pending:
        namespace = _key(pod)[0]
        wanted = [(namespace, name) for name in claim_names(pod)]
        reason = next((r for r in (_reason(k, claims.get(k), held) for k in wanted) if r), "")
        if reason:
            found[_key(pod)] = f"0/1 nodes are available: {reason}."
            continue
        held.update(wanted)
    return found


def _reason(key: PodKey, claim: Obj | None, held: set[PodKey]) -> str:
    if claim is None:
        return f'persistentvolumeclaim "{key[1]}" not found'
    if (claim.get("metadata") or {}).get("deletionTimestamp"):
        return f'persistentvolumeclaim "{key[1]}" is being deleted'
    spec, status = claim.get("spec") or {}, claim.get("status") or {}
    if not spec.get("volumeName") or status.get("phase") != "Bound":
        return UNBOUND
    if "ReadWriteOncePod" in (spec.get("accessModes") or []) and key in held:
        return ONE_POD
    return ""
