"""Entry point of the ``trainop`` command: the click group that every subcommand joins.

Subcommands live in their own modules in this package and are registered here, so that
``trainop --help`` lists them all. Errors from the layers below are ``TrainopError``s and are
printed as one line with a non-zero exit code, never as a traceback.
"""

from __future__ import annotations

import click

import trainop
from trainop.cli.describe import describe
from trainop.cli.jobs import delete, get, resume, submit, suspend, wait
from trainop.cli.local import local
from trainop.cli.logs import logs
from trainop.cli.manifests import manifests
from trainop.cli.operator import operator
from trainop.cli.run import run
from trainop.cli.validate import validate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(trainop.__version__, prog_name="trainop")
def main() -> None:
    """trainop: run kubeflow.org/v1 training jobs on Kubernetes or on this machine."""


main.add_command(manifests)
main.add_command(validate)
main.add_command(local)
main.add_command(operator)
main.add_command(run)
for command in (submit, get, describe, logs, wait, delete, suspend, resume):
    main.add_command(command)


if __name__ == "__main__":
    main()
