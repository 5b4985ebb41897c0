"""A watch line that is not an event makes the informer list afresh; it never stops it."""

from __future__ import annotations

import asyncio

import httpx2
import pytest

from tests.polling import until
from trainop import errors
from trainop.kube.http import HttpClient
from trainop.kube.informer import Informer
from trainop.kube.resources import PODS


def pod(name: str, version: str) -> dict[str, object]:
    meta = {"name": name, "namespace": "default", "resourceVersion": version}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


class Server:
    """Lists answer the pods seen so far; the first watch breaks mid-stream, later ones idle."""

    def __init__(self) -> None:
        self.pods = [pod("a", "1")]
        self.watches = 0

    async def handle(self, request: httpx2.Request) -> httpx2.Response:
        if request.url.params.get("watch") != "true":
            body = {"kind": "PodList", "metadata": {"resourceVersion": "2"}, "items": self.pods}
            return httpx2.Response(200, json=body)
        self.watches += 1
        if self.watches > 1:
            await asyncio.Event().wait()  # a quiet watch, until the test cancels it
        self.pods.append(pod("b", "3"))  # lost with the broken line below
        lines = [b'{"type": "ADDED", "object": {"metadata"', b'{"type": "BOOKMARK"}']
        return httpx2.Response(200, content=b"\n".join(lines) + b"\n")


def client_for(server: Server) -> HttpClient:
    transport = httpx2.MockTransport(server.handle)
    return HttpClient(httpx2.AsyncClient(transport=transport, base_url="https://local.test"))


@pytest.mark.parametrize(
    "line",
    [b"not json", b"[1, 2]", b'{"type": "ADDED"}', b'{"type": 3, "object": {}}'],
)
def test_a_line_that_is_not_an_event_is_a_broken_stream(line: bytes) -> None:
    def handle(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, content=line + b"\n")

    async def main() -> None:
        transport = httpx2.MockTransport(handle)
        client = HttpClient(httpx2.AsyncClient(transport=transport, base_url="https://x.test"))
        with pytest.raises(errors.BrokenStreamError, match="watch pods"):
            async for _ in client.watch(PODS, namespace="default"):
                pass

    asyncio.run(main())


def test_the_informer_lists_afresh_after_a_broken_line_and_keeps_running() -> None:
    server = Server()
    pauses: list[float] = []

    async def sleep(seconds: float) -> None:
        pauses.append(seconds)
        await asyncio.sleep(0)

    async def main() -> None:
        informer = Informer(client_for(server), PODS, namespace="default", sleep=sleep)
        task = asyncio.create_task(informer.run())

        def listed_again() -> bool:
            assert not task.done(), task
            return informer.get("default", "b") is not None

        await until(listed_again, timeout=5, what="b listed after the broken line", interval=0)
        assert informer.relists == 2
        assert pauses, "a broken stream backs off before listing again"
        assert pauses[0] > 0
        task.cancel()

    asyncio.run(main())
