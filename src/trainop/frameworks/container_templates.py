"""Containers from an operator's Go template (upstream renders with ``html/template``).

Upstream lets an operator replace a built-in list of containers with a template file (PyTorch's
``--pytorch-init-container-template-file``): YAML with ``{{.Field}}`` actions. ``render`` fills
in the fields a plugin offers, escaped as ``html/template`` escapes them, and returns the
containers. Only ``{{.Field}}`` actions (with optional spaces and the ``{{-``/``-}}`` whitespace
trims) are understood; anything else is refused rather than guessed.

Pure. Neighbours: ``pytorch`` (its ``init-pytorch`` containers), ``base`` (the default
template); the operator's command line renders a template once at start to refuse a broken one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

import yaml

from trainop import errors
from trainop.frameworks.wirecopy import wire_copy

_ACTION = re.compile(r"(\s*)\{\{(-\s)?\s*\.(\w+)\s*(\s-)?\}\}(\s*)")
# libyaml's safe loader when PyYAML has it: the operator renders a template on every reconcile
# of a PyTorchJob, and the pure-Python loader took 8.6 ms each under cProfile, a quarter of the
# operator's time (docs/benchmarks.md, Controller, 2026-11-27); the documents load the same.
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_HTML_ESCAPES = str.maketrans(
    {
        "&": "&amp;",
        "'": "&#39;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&#34;",
        "+": "&#43;",
        "\0": "\ufffd",
    }
)


def render(template: str, values: Mapping[str, str]) -> list[dict[str, Any]]:
    """The containers ``template`` describes with its fields taken from ``values``.

    Raises ``InvalidTemplateError`` when the template uses another action or a field not in
    ``values``, or does not render to a YAML list of containers (mappings with a ``name``).
    """
    return wire_copy(_rendered(template, tuple(sorted(values.items()))))  # the caller's own


@functools.lru_cache(maxsize=256)
def _rendered(template: str, items: tuple[tuple[str, str], ...]) -> list[dict[str, Any]]:
    """``render``'s containers, cached by template and values: every worker of a job (and
    each of its reconciles) renders the same, and the substitution scans the whole text."""
    values = dict(items)

    def substitute(found: re.Match[str]) -> str:
        before, trim_left, field, trim_right, after = found.groups()
        if field not in values:
            raise errors.InvalidTemplateError(f"template: can't evaluate field {field}")
        value = values[field].translate(_HTML_ESCAPES)
        return ("" if trim_left else before) + value + ("" if trim_right else after)

    text = _ACTION.sub(substitute, template)
    if "{{" in text:
        raise errors.InvalidTemplateError("template: only {{.Field}} actions are supported")
    return _containers(text)


@functools.lru_cache(maxsize=256)
def _containers(text: str) -> list[dict[str, Any]]:
    """The rendered ``text`` loaded and checked; cached, as each reconcile of a job renders the
    same text again (only ``render``'s copies leave this module)."""
    try:
        containers = yaml.load(text, Loader=_FAST_LOADER)
    except yaml.YAMLError:
        try:  # the pure-Python loader's words for the error (libyaml words it otherwise)
            containers = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise errors.InvalidTemplateError(f"template is not YAML: {exc}") from exc
    if not isinstance(containers, list) or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) for c in containers
    ):
        raise errors.InvalidTemplateError("template must render to a list of named containers")
    return containers
