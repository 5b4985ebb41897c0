"""Entry point of the ``trainop`` command: the click group that every subcommand joins.

Subcommands live in their own modules in this package and are registered here, so that
``trainop --help`` lists them all. Errors from the layers below are ``TrainopError``s and are
printed as one line with a non-zero exit code, never as a traceback.
"""

from __future__ import annotations

import os
import signal
import threading
from types import FrameType


def _stop_while_loading(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C or SIGTERM while the modules below load (a second or so): nothing has started
    yet, so exit as the shell reports that signal, with one line and no traceback."""
    del frame
    os.write(2, b"trainop: interrupted while starting\n")
    os._exit(128 + signum)


_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_MAIN_THREAD = threading.current_thread() is threading.main_thread()  # else signal() refuses
_BEFORE = {sig: signal.signal(sig, _stop_while_loading) for sig in _SIGNALS if _MAIN_THREAD}

import importlib  # noqa: E402
from typing import Any  # noqa: E402

import click  # noqa: E402

import trainop  # noqa: E402

# The start-up handlers stay until the command's module has loaded (``_load``).
# Each subcommand's module, loaded when that command runs (or ``--help`` lists them all):
# ``trainop run`` then imports what a session needs, not ``describe``'s SDK or ``convert``'s
# models as well (~0.1 s of a start-up that ``benchmarks/local_overhead.py`` times).
_COMMANDS = {
    "manifests": "trainop.cli.manifests:manifests",
    "validate": "trainop.cli.validate:validate",
    "convert": "trainop.cli.convert:convert",
    "local": "trainop.cli.local:local",
    "operator": "trainop.cli.operator:operator",
    "run": "trainop.cli.run:run",
    **{name: f"trainop.cli.jobs:{name}" for name in ("submit", "get", "wait", "delete")},
    **{name: f"trainop.cli.jobs:{name}" for name in ("suspend", "resume")},
    "describe": "trainop.cli.describe:describe",
    "logs": "trainop.cli.logs:logs",
}


def _load(name: str) -> click.Command:
    """Import one subcommand, with the start-up signal handlers in place while it loads."""
    module, _, attribute = _COMMANDS[name].partition(":")
    for sig in _BEFORE:
        signal.signal(sig, _stop_while_loading)
    try:
        command = getattr(importlib.import_module(module), attribute)
    finally:
        for sig, handler in _BEFORE.items():  # loaded: commands install their own (signals.py)
            signal.signal(sig, handler)
    assert isinstance(command, click.Command)
    return command


class _Commands(dict[str, click.Command]):
    """``Group.commands`` that loads a subcommand the first time it is looked up."""

    def __missing__(self, name: str) -> click.Command:
        if name not in _COMMANDS:
            raise KeyError(name)
        command = self[name] = _load(name)
        return command

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name: object) -> bool:
        return name in _COMMANDS or super().__contains__(name)


class _LazyGroup(click.Group):
    """A group whose subcommands are named up front and imported on use."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands(self.commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands.keys()) | set(_COMMANDS))


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(trainop.__version__, prog_name="trainop")
def main() -> None:
    """trainop: run kubeflow.org/v1 training jobs on Kubernetes or on this machine."""


if __name__ == "__main__":
    main()
