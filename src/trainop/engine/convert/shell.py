"""The shell prologue of a converted container: per-pod values that need arithmetic or a table.

A pod template is shared by every pod of an Indexed Job, so a value that differs from pod to
pod must be computed in the pod from its completion index. Where the downward API cannot do it
(a rank offset, ``TF_CONFIG``'s task index inside JSON), the container runs ``/bin/sh -c`` with
a prologue that exports those variables from ``JOB_COMPLETION_INDEX`` (which the Job controller
gives every container of an Indexed pod) and then ``exec``s the original command and args.

The original words are written into the script, not passed as ``"$@"``: a word that references
a prologue variable as ``$(RANK)`` would otherwise stay unexpanded (the kubelet expands
``$(VAR)`` from the container's ``env`` only), so every ``$(NAME)`` becomes the shell's
``"${NAME}"`` and everything else is single-quoted. ``$$`` stays a literal ``$``, as the kubelet
reads it. Nothing in the script has the form ``$(NAME)``, so the kubelet's own expansion of the
command leaves it as written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

INDEX_VARIABLE = "JOB_COMPLETION_INDEX"
SHELL = "/bin/sh"
_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def quote(text: str) -> str:
    """``text`` as one single-quoted shell word (``''`` when empty)."""
    return "'" + text.replace("'", "'\\''") + "'"


def word(value: str) -> str:
    """A kubelet value (``$(NAME)`` references, ``$$`` escapes) as one shell word."""
    parts: list[str] = []
    last = 0
    for found in _REFERENCE.finditer(value):
        if found.start() > last:
            parts.append(quote(value[last : found.start()]))
        parts.append(quote("$") if found[0] == "$$" else f'"${{{found[1]}}}"')
        last = found.end()
    if last < len(value) or not parts:
        parts.append(quote(value[last:]))
    return "".join(parts)


def offset_export(name: str, offset: int) -> str:
    """``export NAME=$((JOB_COMPLETION_INDEX + offset))``."""
    sign = "+" if offset >= 0 else "-"
    return f"export {name}=$(({INDEX_VARIABLE} {sign} {abs(offset)}))"


def table_export(name: str, values: Mapping[int, str]) -> str:
    """A ``case`` over the completion index exporting ``name`` (indexes absent: not set)."""
    arms = " ".join(f"{index}) export {name}={word(value)};;" for index, value in values.items())
    return f'case "${INDEX_VARIABLE}" in {arms} esac'


def wrap(exports: Sequence[str], command: Sequence[str]) -> list[str]:
    """The container command that runs ``exports`` then ``exec``s ``command`` (its words)."""
    script = "\n".join([*exports, "exec " + " ".join(word(w) for w in command)])
    return [SHELL, "-c", script]
