"""Server-side printing: ``Table`` and ``PartialObjectMetadata`` answers to GET and LIST.

kubectl asks ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io`` (then ``v1beta1``, then
plain JSON) and prints the columns the server chose. ``negotiate`` reads that header: the first
media range this server can produce wins (``Table`` or ``PartialObjectMetadata[List]`` in
``meta.k8s.io`` v1 or v1beta1, else the object itself as JSON, which is also the answer to
anything unknown, as before). Columns: kube's printers for built-in kinds (``printers``), a
CRD version's ``additionalPrinterColumns`` for custom resources (evaluated with the small
JSONPath subset CRDs use: fields, ``[n]``, ``[a:b]``, ``[*]``, ``['key']`` and
``[?(@.f=="v")]``), or NAME and AGE. ``includeObject`` (``None``, ``Metadata`` by default,
``Object``) says what each row carries. A watch that asks for a Table gets one single-row
Table per event (``watch_converter``), as ``kubectl get -w`` expects.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from trainop.cluster.apiserver import store
from trainop.cluster.apiserver.rest import jobprinters, printers, resources, storageprinters

META_GROUP = "meta.k8s.io"
_VERSIONS = ("v1", "v1beta1")
_CRDS = "apiextensions.k8s.io/customresourcedefinitions"
Step = Callable[[Any], list[Any]]
Clock = Callable[[], datetime]


@dataclass(frozen=True, slots=True)
class Wanted:
    """What the client accepts: ``as_`` is Table, PartialObjectMetadata[List] or "" (JSON)."""

    as_: str = ""
    version: str = "v1"

    @property
    def api_version(self) -> str:
        return f"{META_GROUP}/{self.version}"


def negotiate(accept: str | None) -> Wanted:
    """The first acceptable media range of an ``Accept`` header that this server serves."""
    for media in (accept or "").split(","):
        kind, *raw = (part.strip() for part in media.split(";"))
        params = dict(p.split("=", 1) for p in raw if "=" in p)
        if kind not in ("application/json", "application/*", "*/*"):
            continue
        as_ = params.get("as", "")
        if not as_:
            return Wanted()
        served = as_ in ("Table", "PartialObjectMetadata", "PartialObjectMetadataList")
        if served and params.get("g") == META_GROUP and params.get("v") in _VERSIONS:
            return Wanted(as_=as_, version=params["v"])
    return Wanted()


def metadata_only(wanted: Wanted, obj: dict[str, Any]) -> dict[str, Any]:
    """``PartialObjectMetadata`` of ``obj``."""
    meta = obj.get("metadata") or {}
    return {"kind": "PartialObjectMetadata", "apiVersion": wanted.api_version, "metadata": meta}


def metadata_list(wanted: Wanted, objs: list[dict[str, Any]], meta: dict[str, Any]) -> bytes:
    """``PartialObjectMetadataList`` of ``objs``."""
    items = [metadata_only(wanted, o) for o in objs]
    body = {"kind": "PartialObjectMetadataList", "apiVersion": wanted.api_version}
    return store.encode({**body, "metadata": meta, "items": items})


def table(
    wanted: Wanted,
    *,
    db: store.Store,
    rt: resources.ResourceType,
    objs: list[dict[str, Any]],
    meta: dict[str, Any],
    include: str,
    now: datetime,
) -> bytes:
    """A ``Table`` of ``objs`` with ``rt``'s columns; ``include`` is the includeObject value."""
    columns, row_of = _printer(db, rt)
    rows = []
    for obj in objs:
        row: dict[str, Any] = {"cells": row_of(obj, now)}
        if include == "Object":
            row["object"] = {**obj, "apiVersion": rt.api_version}
        elif include != "None":
            row["object"] = metadata_only(wanted, obj)
        if rt.store_key == "core/pods" and printers.pod_completed(obj):
            row["conditions"] = [_completed(obj)]
        rows.append(row)
    head = {"kind": "Table", "apiVersion": wanted.api_version, "metadata": meta}
    return store.encode({**head, "columnDefinitions": columns, "rows": rows})


def watch_converter(
    wanted: Wanted, *, db: store.Store, rt: resources.ResourceType, include: str, clock: Clock
) -> Callable[[bytes], bytes]:
    """Rewrites a chunk of watch event lines so each object is a one-row Table (or metadata).

    Bookmarks and errors pass unchanged. Only watches that ask for these formats pay for the
    decoding; plain watches keep streaming the stored bytes.
    """

    def convert(chunk: bytes) -> bytes:
        out = []
        for line in chunk.splitlines():
            event = json.loads(line)
            obj = event.get("object") or {}
            if event.get("type") in ("ADDED", "MODIFIED", "DELETED"):
                meta = {"resourceVersion": (obj.get("metadata") or {}).get("resourceVersion", "")}
                if wanted.as_ == "Table":
                    body = table(
                        wanted, db=db, rt=rt, objs=[obj], meta=meta, include=include, now=clock()
                    )
                    event["object"] = json.loads(body)
                else:
                    event["object"] = metadata_only(wanted, obj)
            out.append(store.encode(event) + b"\n")
        return b"".join(out)

    return convert


def _completed(obj: dict[str, Any]) -> dict[str, str]:
    ok = (obj.get("status") or {}).get("phase") == "Succeeded"
    message = "The pod has completed successfully." if ok else "The pod failed."
    reason = "Succeeded" if ok else "Failed"
    return {"type": "Completed", "status": "True", "reason": reason, "message": message}


def _printer(
    db: store.Store, rt: resources.ResourceType
) -> tuple[list[printers.Column], printers.RowFunction]:
    if not rt.custom:
        key = rt.store_key
        found = (
            printers.BUILTIN.get(key)
            or storageprinters.BUILTIN.get(key)
            or jobprinters.BUILTIN.get(key)
        )
        return found or printers.DEFAULT
    crd = db.get(store.Key(resource=_CRDS, namespace="", name=f"{rt.plural}.{rt.group}"))
    versions = ((crd.obj.get("spec") or {}).get("versions") or []) if crd else []
    served: dict[str, Any] = next((v for v in versions if v.get("name") == rt.version), {})
    extra = served.get("additionalPrinterColumns")
    if extra is None:  # kube's default for a CRD version without columns: Age
        extra = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    columns = [printers.NAME]
    for spec in extra:
        kind, prio = spec.get("type", "string"), int(spec.get("priority") or 0)
        columns.append(printers.column(spec["name"], spec.get("description", ""), priority=prio))
        columns[-1].update(type=kind, format=spec.get("format", ""))
    paths = [(_compile(spec.get("jsonPath", "")), spec.get("type", "string")) for spec in extra]

    def row(obj: dict[str, Any], now: datetime) -> printers.Cells:
        name = (obj.get("metadata") or {}).get("name", "")
        return [name, *(_cell(kind, _first(steps, obj), now) for steps, kind in paths)]

    return columns, row


def _cell(kind: str, value: Any, now: datetime) -> Any:
    """A custom column's cell, converted by the column's type as kube does."""
    if value is None:
        return None
    if kind == "date":
        return printers.since(value, now) if printers.parse_time(value) else "<invalid>"
    if kind == "integer":
        return _number(value, int)
    if kind == "number":
        return _number(value, float)
    if kind == "boolean":
        return value if isinstance(value, bool) else str(value).lower() == "true"
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _number(value: Any, kind: type[int] | type[float]) -> Any:
    if isinstance(value, bool):
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        return None


# ---- the JSONPath subset of printer columns ----------------------------------------------

_TOKEN = re.compile(
    r"\.(?P<field>[A-Za-z0-9_\-]+)"
    r"|\[(?P<slice>-?\d*:-?\d*)\]"
    r"|\[(?P<index>-?\d+)\]"
    r"|\[(?P<star>\*)\]"
    r"|\[['\"](?P<key>[^'\"]*)['\"]\]"
    r"|\[\?\(@\.(?P<fpath>[\w.\-]+)\s*==\s*['\"](?P<fvalue>[^'\"]*)['\"]\)\]"
)


@functools.lru_cache(maxsize=256)
def _compile(path: str) -> tuple[Step, ...] | None:
    """The steps of ``path`` (``{.a.b}`` braces allowed), or None when it is not understood."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    steps: list[Step] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            return None
        steps.append(_step(match))
        pos = match.end()
    return tuple(steps)


def _step(match: re.Match[str]) -> Step:
    if match["field"] is not None or match["key"] is not None:
        name = match["field"] if match["field"] is not None else match["key"]
        return lambda v: [v[name]] if isinstance(v, dict) and name in v else []
    if match["index"] is not None:
        i = int(match["index"])
        return lambda v: [v[i]] if isinstance(v, list) and -len(v) <= i < len(v) else []
    if match["slice"] is not None:
        start, _, end = match["slice"].partition(":")
        part = slice(int(start) if start else None, int(end) if end else None)
        return lambda v: v[part] if isinstance(v, list) else []
    if match["star"] is not None:
        return lambda v: list(v) if isinstance(v, list) else _values(v)
    fpath, wanted = match["fpath"].split("."), match["fvalue"]
    return lambda v: [i for i in v if _dig(i, fpath) == wanted] if isinstance(v, list) else []


def _values(value: Any) -> list[Any]:
    return list(value.values()) if isinstance(value, dict) else []


def _dig(value: Any, path: list[str]) -> Any:
    for name in path:
        value = value.get(name) if isinstance(value, dict) else None
    return None if value is None else str(value)


def _first(steps: tuple[Step, ...] | None, obj: dict[str, Any]) -> Any:
    if steps is None:
        return None
    values: list[Any] = [obj]
    for step in steps:
        values = [out for value in values for out in step(value)]
    return values[0] if values else None
