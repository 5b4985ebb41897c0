"""``processes.start``: a new container group registers itself with the reaper's pipe."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from trainop.cluster.kubelet.runtimes import processes


def test_a_new_group_writes_its_own_line_before_its_program_runs(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    marker = tmp_path / "ran"

    async def main() -> int:
        process = await processes.start(
            [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"],
            env=dict(os.environ),
            cwd=tmp_path,
            watch_fd=write_end,
        )
        await process.communicate()
        return process.pid

    try:
        pid = asyncio.run(main())
        os.close(write_end)
        written = os.read(read_end, 4096).decode()
    finally:
        os.close(read_end)
    assert written == f"+{pid}\n"  # its group (process_group 0: the pid) and nothing else
    assert marker.exists()


def test_a_given_group_is_not_registered_again(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()

    async def main() -> None:
        process = await processes.start(
            [sys.executable, "-c", "pass"],
            env=dict(os.environ),
            cwd=tmp_path,
            process_group=os.getpgid(0),
            watch_fd=write_end,
        )
        await process.communicate()

    try:
        asyncio.run(main())
        os.close(write_end)
        assert os.read(read_end, 4096) == b""
    finally:
        os.close(read_end)
