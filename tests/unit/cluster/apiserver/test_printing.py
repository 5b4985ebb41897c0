"""kube's printed cells (``apiserver.printers``) and Accept negotiation (``apiserver.tables``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from trainop.cluster.apiserver.rest import printers, tables

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _ago(seconds: float) -> str:
    return (NOW - timedelta(seconds=seconds)).isoformat().replace("+00:00", "Z")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (-5, "<invalid>"),
        (0, "0s"),
        (119, "119s"),
        (180, "3m"),
        (200, "3m20s"),
        (3600, "60m"),
        (4 * 3600 + 60, "4h1m"),
        (30 * 3600, "30h"),
        (50 * 3600, "2d2h"),
        (72 * 3600, "3d"),
        (400 * 86400, "400d"),
        (800 * 86400, "2y70d"),
        (3000 * 86400, "8y"),
    ],
)
def test_human_duration(seconds: float, text: str) -> None:
    assert printers.human_duration(seconds) == text


def _pod(status: dict[str, Any], **meta: Any) -> dict[str, Any]:
    spec = {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "local"}
    metadata = {"name": "p", "creationTimestamp": _ago(60), **meta}
    return {"metadata": metadata, "spec": spec, "status": status}


def _cells(obj: dict[str, Any]) -> list[Any]:
    columns, row = printers.BUILTIN["core/pods"]
    cells = row(obj, NOW)
    assert len(cells) == len(columns)
    return cells


def test_pod_running_with_restarts() -> None:
    statuses = [
        {"ready": True, "restartCount": 2, "state": {"running": {}}},
        {
            "ready": True,
            "restartCount": 1,
            "state": {"running": {}},
            "lastState": {"terminated": {"exitCode": 1, "finishedAt": _ago(30)}},
        },
    ]
    cells = _cells(_pod({"phase": "Running", "containerStatuses": statuses, "podIP": "1.2.3.4"}))
    assert cells[:5] == ["p", "2/2", "Running", "3 (30s ago)", "60s"]
    assert cells[5:7] == ["1.2.3.4", "local"]


@pytest.mark.parametrize(
    ("state", "shown"),
    [
        ({"waiting": {"reason": "CrashLoopBackOff"}}, "CrashLoopBackOff"),
        ({"terminated": {"reason": "Completed", "exitCode": 0}}, "Completed"),
        ({"terminated": {"exitCode": 3}}, "ExitCode:3"),
        ({"terminated": {"exitCode": 137, "signal": 9}}, "Signal:9"),
    ],
)
def test_pod_status_from_container_state(state: dict[str, Any], shown: str) -> None:
    statuses = [{"ready": False, "restartCount": 0, "state": state}]
    assert _cells(_pod({"phase": "Running", "containerStatuses": statuses}))[2] == shown


def test_terminating_and_init_containers() -> None:
    deleting = _pod({"phase": "Running"}, deletionTimestamp=_ago(1))
    assert _cells(deleting)[2] == "Terminating"
    init = _pod({"phase": "Pending", "initContainerStatuses": [{"state": {"running": {}}}]})
    init["spec"]["initContainers"] = [{"name": "i"}]
    assert _cells(init)[2] == "Init:0/1"


def test_service_and_event_cells() -> None:
    _, service_row = printers.BUILTIN["core/services"]
    service = {
        "metadata": {"name": "s"},
        "spec": {"clusterIP": "None", "ports": [{"port": 80}], "selector": {"a": "b"}},
    }
    assert service_row(service, NOW)[:5] == ["s", "ClusterIP", "None", "<none>", "80/TCP"]
    _, event_row = printers.BUILTIN["core/events"]
    event = {
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "PyTorchJob", "name": "j"},
        "type": "Normal",
        "reason": "Created",
        "message": "made ",
        "lastTimestamp": _ago(5),
    }
    assert event_row(event, NOW)[:4] == ["5s", "Normal", "Created", "pytorchjob/j"]


@pytest.mark.parametrize(
    ("accept", "wanted"),
    [
        (None, tables.Wanted()),
        ("application/json", tables.Wanted()),
        (
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            tables.Wanted("Table", "v1"),
        ),
        ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", tables.Wanted("Table", "v1beta1")),
        ("application/json;as=Table;v=v2;g=meta.k8s.io,application/json", tables.Wanted()),
        (
            "application/json; as=PartialObjectMetadata; g=meta.k8s.io; v=v1",
            tables.Wanted("PartialObjectMetadata", "v1"),
        ),
        ("application/vnd.kubernetes.protobuf", tables.Wanted()),
    ],
)
def test_negotiate(accept: str | None, wanted: tables.Wanted) -> None:
    assert tables.negotiate(accept) == wanted


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (".status.conditions[-1:].type", "Running"),
        (".status.conditions[0].type", "Created"),
        ('.status.conditions[?(@.type=="Created")].status', "True"),
        (".metadata.labels['app.kubernetes.io/name']", "x"),
        ("{.spec.replicas}", 2),
        (".spec.missing", None),
        (".spec[", None),
    ],
)
def test_printer_column_json_path(path: str, value: Any) -> None:
    obj = {
        "metadata": {"labels": {"app.kubernetes.io/name": "x"}},
        "spec": {"replicas": 2},
        "status": {
            "conditions": [
                {"type": "Created", "status": "True"},
                {"type": "Running", "status": "True"},
            ]
        },
    }
    assert tables._first(tables._compile(path), obj) == value
