"""Private state: the umask, 0700 directories, and what container processes inherit."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from trainop.cluster import privacy
from trainop.cluster.apiserver import store
from trainop.cluster.kubelet.runtimes import processes


@pytest.fixture
def umask_022() -> Iterator[None]:
    """Run with umask 022 and restore the process's umask (and the module's memory) after."""
    saved, remembered = os.umask(0o022), privacy._inherited
    privacy._inherited = None
    try:
        yield
    finally:
        os.umask(saved)
        privacy._inherited = remembered


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def test_a_state_directory_is_created_and_narrowed_to_0700(tmp_path: Path, umask_022: None) -> None:
    fresh = privacy.private_state_dir(tmp_path / "a" / "b" / "state")
    assert [mode(p) for p in (tmp_path / "a", tmp_path / "a" / "b", fresh)] == [0o700] * 3
    assert privacy.inherited_umask() == 0o022
    assert os.umask(0o077) == 0o077  # what private_state_dir left in place
    old = tmp_path / "old"
    old.mkdir(mode=0o755)
    old.chmod(0o755)
    privacy.private_state_dir(old)
    assert mode(old) == 0o700


def test_the_store_files_are_0600_whatever_the_umask(tmp_path: Path, umask_022: None) -> None:
    path = tmp_path / "state" / "store.db"
    db = store.Store(path=path)
    asyncio.run(db.close())
    assert mode(path.parent) == 0o700
    files = [p for p in path.parent.iterdir() if p.name.startswith("store.db")]
    assert files
    assert {p.name: mode(p) for p in files} == dict.fromkeys((p.name for p in files), 0o600)


def test_container_processes_get_the_users_own_umask(tmp_path: Path, umask_022: None) -> None:
    privacy.restrict_umask()

    async def umask_of_child() -> str:
        code = "import os; print(oct(os.umask(0)))"
        child = await processes.start([sys.executable, "-c", code], env=os.environ, cwd=tmp_path)
        out, _ = await child.communicate()
        return out.decode().strip()

    assert asyncio.run(umask_of_child()) == "0o22"
