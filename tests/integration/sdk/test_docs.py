"""The runnable snippets of docs/sdk.md and docs/cli.md (fences marked ``run``) run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[3] / "docs"
FENCE = re.compile(r"^```(python|sh) run\n(.*?)^```", re.MULTILINE | re.DOTALL)


def snippets(*names: str) -> list[tuple[str, str, str]]:
    found = []
    for name in names:
        for index, match in enumerate(FENCE.finditer((DOCS / name).read_text())):
            found.append((f"{name}#{index}", match.group(1), match.group(2)))
    return found


SNIPPETS = snippets("sdk.md", "cli.md")


def test_each_doc_has_runnable_snippets() -> None:
    assert {label.split("#")[0] for label, _, _ in SNIPPETS} == {"sdk.md", "cli.md"}


@pytest.mark.parametrize(("label", "language", "code"), SNIPPETS, ids=[s[0] for s in SNIPPETS])
def test_snippet_runs(
    kubeconfig: Path, tmp_path: Path, label: str, language: str, code: str
) -> None:
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "PY": sys.executable,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    script = tmp_path / "snippet.py"
    script.write_text(code)
    command = (
        [sys.executable, str(script)]
        if language == "python"
        else ["bash", "-euo", "pipefail", "-c", code]
    )
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{label}:\n{done.stdout}\n{done.stderr}"
