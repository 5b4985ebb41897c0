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

import click  # noqa: E402

import trainop  # noqa: E402
from trainop.cli.convert import convert  # noqa: E402
from trainop.cli.describe import describe  # noqa: E402
from trainop.cli.jobs import delete, get, resume, submit, suspend, wait  # noqa: E402
from trainop.cli.local import local  # noqa: E402
from trainop.cli.logs import logs  # noqa: E402
from trainop.cli.manifests import manifests  # noqa: E402
from trainop.cli.operator import operator  # noqa: E402
from trainop.cli.run import run  # noqa: E402
from trainop.cli.validate import validate  # noqa: E402

for _sig, _handler in _BEFORE.items():  # loaded: commands install their own (cli/signals.py)
    signal.signal(_sig, _handler)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(trainop.__version__, prog_name="trainop")
def main() -> None:
    """trainop: run kubeflow.org/v1 training jobs on Kubernetes or on this machine."""


main.add_command(manifests)
main.add_command(validate)
main.add_command(convert)
main.add_command(local)
main.add_command(operator)
main.add_command(run)
for command in (submit, get, describe, logs, wait, delete, suspend, resume):
    main.add_command(command)


if __name__ == "__main__":
    main()
