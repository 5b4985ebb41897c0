"""``cli.eventloop``: uvloop's loop where importable, asyncio's when asked or missing."""

from __future__ import annotations

import asyncio
import sys

import pytest

from trainop.cli import eventloop


async def _loop_module() -> str:
    await asyncio.sleep(0)
    return type(asyncio.get_running_loop()).__module__


def test_runs_on_uvloop_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("uvloop")
    monkeypatch.delenv(eventloop.ENV_VAR, raising=False)
    assert eventloop.loop_name() == "uvloop"
    assert eventloop.run(_loop_module()).startswith("uvloop")


def test_env_var_forces_asyncio(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(eventloop.ENV_VAR, "asyncio")
    assert eventloop.loop_name() == "asyncio"
    assert eventloop.run(_loop_module()).startswith("asyncio")


def test_falls_back_to_asyncio_without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(eventloop.ENV_VAR, raising=False)
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import raises ImportError
    assert eventloop.loop_name() == "asyncio"
    assert eventloop.run(_loop_module()).startswith("asyncio")


def test_result_and_exception_pass_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(eventloop.ENV_VAR, raising=False)

    async def boom() -> None:
        raise ValueError("x")

    async def value() -> int:
        return 42

    assert eventloop.run(value()) == 42
    with pytest.raises(ValueError, match="x"):
        eventloop.run(boom())
