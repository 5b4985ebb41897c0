"""Client-side rate limiting (``--qps``/``--burst``), as client-go's token bucket does it.

``RateLimitedClient`` wraps any ``Client``: each request takes a token from a bucket that holds
``burst`` tokens and refills at ``qps`` per second; watches are long-lived and exempt. Time
comes from an injected monotonic function and sleep, so tests need no real waiting.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from trainop.kube.client import Client, JsonPatch, Obj, ObjectList, PatchType, WatchEvent
from trainop.kube.resources import Resource


class TokenBucket:
    """``burst`` tokens, refilled at ``qps`` per second."""

    def __init__(
        self,
        *,
        qps: float,
        burst: int,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._qps = qps
        self._burst = float(max(burst, 1))
        self._tokens = self._burst
        self._monotonic = monotonic
        self._sleep = sleep
        self._last = monotonic()

    async def take(self) -> None:
        """Wait until a token is available, then take it."""
        while True:
            now = self._monotonic()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
            self._last = now
            if self._tokens >= 1:
                self._tokens -= 1
                return
            await self._sleep((1 - self._tokens) / self._qps)


class RateLimitedClient:
    """A ``Client`` whose requests (not watches) pass through a ``TokenBucket``."""

    def __init__(self, inner: Client, bucket: TokenBucket) -> None:
        self._inner = inner
        self._bucket = bucket

    async def get(self, resource: Resource, *, name: str, namespace: str | None = None) -> Obj:
        await self._bucket.take()
        return await self._inner.get(resource, name=name, namespace=namespace)

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
        await self._bucket.take()
        return await self._inner.list(
            resource,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            limit=limit,
            continue_token=continue_token,
        )

    async def create(self, resource: Resource, obj: Obj, *, namespace: str | None = None) -> Obj:
        await self._bucket.take()
        return await self._inner.create(resource, obj, namespace=namespace)

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
        await self._bucket.take()
        return await self._inner.patch(
            resource,
            name=name,
            patch=patch,
            namespace=namespace,
            patch_type=patch_type,
            subresource=subresource,
            field_manager=field_manager,
            force=force,
        )

    async def replace(
        self, resource: Resource, obj: Obj, *, namespace: str | None = None, subresource: str = ""
    ) -> Obj:
        await self._bucket.take()
        return await self._inner.replace(
            resource, obj, namespace=namespace, subresource=subresource
        )

    async def delete(
        self,
        resource: Resource,
        *,
        name: str,
        namespace: str | None = None,
        propagation_policy: str = "Background",
        preconditions_uid: str = "",
    ) -> None:
        await self._bucket.take()
        await self._inner.delete(
            resource,
            name=name,
            namespace=namespace,
            propagation_policy=propagation_policy,
            preconditions_uid=preconditions_uid,
        )

    def watch(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str = "",
        resource_version: str = "",
        timeout_seconds: int = 0,
    ) -> AsyncIterator[WatchEvent]:
        return self._inner.watch(
            resource,
            namespace=namespace,
            label_selector=label_selector,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
        )

    async def close(self) -> None:
        await self._inner.close()
