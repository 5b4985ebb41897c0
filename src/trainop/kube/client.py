"""The client protocol: how every layer above reaches a Kubernetes API.

Objects travel as raw dicts (``Obj``), never as generated model classes: decoding pods into
models costs 50x more CPU and 3x more memory (DESIGN §12). Two implementations exist:
``kube.http.HttpClient`` (a real API server, or trainop's embedded one) and
``kube.fake.FakeClient`` (in memory, with per-verb error injection, for unit tests).

Errors: every method raises ``trainop.errors.ApiError`` subclasses only (``NotFoundError``,
``AlreadyExistsError``, ``ConflictError``, ``GoneError``, ``UnreachableError``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from trainop.kube.resources import Resource

Obj = dict[str, Any]
EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
PatchType = Literal["merge", "json", "strategic", "apply"]  # apply: server-side apply
JsonPatch = list[Obj]  # RFC 6902 operations


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One event of a watch stream; ``obj`` is the object (for BOOKMARK: only metadata)."""

    type: EventType
    obj: Obj


@dataclass(frozen=True, slots=True)
class ObjectList:
    """The result of a list call: the items and the list's resourceVersion."""

    items: list[Obj]
    resource_version: str
    continue_token: str = field(default="")


class Client(Protocol):
    """Asynchronous access to one Kubernetes API server."""

    async def get(self, resource: Resource, *, name: str, namespace: str | None = None) -> Obj:
        """The object, or ``NotFoundError``."""
        ...

    async def list(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
    ) -> ObjectList:
        """Objects of ``resource`` (all namespaces when ``namespace`` is None)."""
        ...

    async def create(self, resource: Resource, obj: Obj, *, namespace: str | None = None) -> Obj:
        """Create ``obj``; ``AlreadyExistsError`` when the name is taken."""
        ...

    async def patch(
        self,
        resource: Resource,
        *,
        name: str,
        patch: Obj | JsonPatch,
        namespace: str | None = None,
        patch_type: PatchType = "merge",
        subresource: str = "",
        field_manager: str = "",
        force: bool = False,
    ) -> Obj:
        """Patch an object (or its ``status`` subresource); returns the new object.

        ``patch_type="apply"`` is a server-side apply (creates the object when absent) under
        ``field_manager``, taking over conflicting fields when ``force``."""
        ...

    async def replace(
        self, resource: Resource, obj: Obj, *, namespace: str | None = None, subresource: str = ""
    ) -> Obj:
        """PUT ``obj`` with its resourceVersion; ``ConflictError`` when it is stale."""
        ...

    async def delete(
        self,
        resource: Resource,
        *,
        name: str,
        namespace: str | None = None,
        propagation_policy: str = "Background",
        preconditions_uid: str = "",
    ) -> None:
        """Delete an object; ``NotFoundError`` when it is already gone."""
        ...

    def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        resource_version: str = "",
        timeout_seconds: int = 0,
    ) -> AsyncIterator[WatchEvent]:
        """Events after ``resource_version`` (with bookmarks); ``GoneError`` when it is too old."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...
