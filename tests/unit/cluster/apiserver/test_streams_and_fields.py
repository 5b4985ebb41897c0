"""Pure pieces of exec streaming and built-in field handling."""

from __future__ import annotations

import base64
import zlib
from typing import Any

import pytest

from trainop.cluster.apiserver.admission import builtin_fields
from trainop.cluster.apiserver.streams import channels, portforward, streams
from trainop.cluster.kubelet import node


def test_exit_codes_become_kubes_statuses() -> None:
    assert channels.exit_status(0) == {"metadata": {}, "status": "Success"}
    failed = channels.exit_status(3)
    assert (failed["status"], failed["reason"]) == ("Failure", "NonZeroExitCode")
    assert failed["details"]["causes"] == [{"reason": "ExitCode", "message": "3"}]


def _pod(state: dict[str, Any] | None) -> dict[str, Any]:
    statuses = [{"name": "main", "state": state}] if state is not None else []
    return {"metadata": {"name": "p"}, "status": {"containerStatuses": statuses}}


@pytest.mark.parametrize(
    ("state", "running"),
    [
        ({"running": {"startedAt": "x"}}, True),
        ({"terminated": {"exitCode": 0}}, False),
        ({"waiting": {"reason": "CrashLoopBackOff"}}, False),
        (None, True),  # no status yet: assume it runs (the kubelet says otherwise if not)
    ],
)
def test_a_container_runs_while_its_state_says_so(
    state: dict[str, Any] | None, running: bool
) -> None:
    assert streams._is_running(_pod(state), "main") is running


def test_the_exec_annotation_is_the_one_the_kubelet_writes() -> None:
    assert streams.ANNOTATION == node.EXEC_ANNOTATION


def test_unknown_fields_are_removed_and_named() -> None:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "x", "labels": {"any": "key"}, "bogus": 1},
        "spec": {
            "containers": [{"name": "c", "image": "i", "envv": [], "env": [{"name": "A", "x": 1}]}],
            "nodeSelector": {"free": "form"},
        },
    }
    found = builtin_fields.unknown("io.k8s.api.core.v1.Pod", pod)
    assert found == ["metadata.bogus", "spec.containers[0].envv", "spec.containers[0].env[0].x"]
    assert pod["metadata"] == {"name": "x", "labels": {"any": "key"}}
    assert pod["spec"]["containers"][0] == {"name": "c", "image": "i", "env": [{"name": "A"}]}


@pytest.mark.parametrize("garbage", [None, 3, "s", [1, [2]], {"spec": "not-a-map"}, {"spec": []}])
def test_unknown_fields_never_fail_on_wrong_types(garbage: Any) -> None:
    obj = {"kind": "Pod", "spec": garbage}
    builtin_fields.unknown("io.k8s.api.core.v1.Pod", obj)  # validation reports the types


def test_string_data_is_merged_into_data() -> None:
    secret: dict[str, Any] = {"data": {"a": "eA=="}, "stringData": {"a": "new", "b": "é"}}
    builtin_fields.merge_string_data(secret)
    assert "stringData" not in secret
    assert base64.b64decode(secret["data"]["a"]) == b"new"
    assert base64.b64decode(secret["data"]["b"]) == "é".encode()
    empty: dict[str, Any] = {"stringData": {}}
    builtin_fields.merge_string_data(empty)
    assert empty == {}


def test_spdy_dictionary_and_header_blocks() -> None:
    assert len(portforward.DICTIONARY) == 1423
    assert zlib.adler32(portforward.DICTIONARY) == 0xE3C6A7C2  # SPDY/3's dictionary id
    pairs = [("streamtype", "data"), ("port", "8080"), ("requestid", "0")]
    raw = len(pairs).to_bytes(4, "big") + b"".join(
        len(k).to_bytes(4, "big") + k.encode() + len(v).to_bytes(4, "big") + v.encode()
        for k, v in pairs
    )
    deflate = zlib.compressobj(zdict=portforward.DICTIONARY)
    block = deflate.compress(raw) + deflate.flush(zlib.Z_SYNC_FLUSH)
    inflate = zlib.decompressobj(zdict=portforward.DICTIONARY)
    assert portforward.parse_headers(inflate.decompress(block)) == dict(pairs)


@pytest.mark.parametrize(
    ("pod_ip", "target"),
    [
        ("10.89.0.7", "10.89.0.7"),  # a container on the session's network
        ("127.0.0.1", "127.0.0.1"),  # a process pod
        ("8.8.8.8", "127.0.0.1"),  # a written status cannot send the tunnel elsewhere
        ("not an address", "127.0.0.1"),
        ("", "127.0.0.1"),
    ],
)
def test_port_forward_reaches_the_pods_own_private_address_only(pod_ip: str, target: str) -> None:
    assert portforward.pod_address({"status": {"podIP": pod_ip}}) == target
