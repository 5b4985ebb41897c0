"""The prologue's shell words: literal text stays literal, kubelet references become the
shell's, and the script the kubelet expands is left as written."""

from __future__ import annotations

import subprocess

from trainop.cluster.kubelet.environment import expand
from trainop.engine.convert import shell


def _echo(words: list[str], env: dict[str, str]) -> str:
    script = shell.wrap(
        [shell.offset_export("RANK", 2), shell.table_export("T", {0: "a", 1: "b'c"})], words
    )
    # The kubelet expands $(VAR) in the command first; the script must survive it unchanged.
    argv = [expand(w, env.get) for w in script]
    assert argv == script
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout


def test_exports_and_references_reach_the_program() -> None:
    env = {"JOB_COMPLETION_INDEX": "1", "PATH": "/usr/bin:/bin", "HOST": "h"}
    out = _echo(["printf", "%s|", "$(RANK)", "$(T)", "it's $(HOST)", "$$(HOST)", "*"], env)
    assert out == "3|b'c|it's h|$(HOST)|*|"


def test_a_table_sets_nothing_for_indexes_it_lacks() -> None:
    env = {"JOB_COMPLETION_INDEX": "5", "PATH": "/usr/bin:/bin"}
    assert _echo(["printf", "[%s]", "${T-unset}"], env) == "[${T-unset}]"  # single-quoted
    script = shell.wrap([shell.table_export("T", {0: "a"})], ["printenv", "T"])
    result = subprocess.run(script, env=env, capture_output=True, text=True)
    assert result.returncode == 1
    assert result.stdout == ""
