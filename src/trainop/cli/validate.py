"""``trainop validate -f FILE``: check job manifests offline, as the admission webhook would.

Each document of the (multi-document) YAML file is parsed, defaulted and validated. A valid job
prints ``OK <Kind>/<name>`` plus its warnings; an invalid one prints one line per field error,
``FILE: <path>: <Type>: <detail>``. Any problem makes the exit code 1. A file that cannot be read
or parsed is one line on stderr, never a traceback.
"""

from __future__ import annotations

from pathlib import Path

import click

from trainop.api import manifest
from trainop.errors import FieldError, ManifestError, TrainopError


@click.command("validate")
@click.option(
    "-f",
    "--filename",
    "filename",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML file with one or more job manifests.",
)
def validate(*, filename: Path) -> None:
    """Validate the jobs in a manifest file."""
    source = str(filename)
    try:
        documents = manifest.parse_documents(_read(filename), source=source)
    except ManifestError as exc:
        click.echo(str(exc), err=True)
        raise SystemExit(1) from exc
    failed = [not _check(document, source=source) for document in documents]
    if any(failed) or not documents:
        if not documents:
            click.echo(f"{source}: no documents", err=True)
        raise SystemExit(1)


def _read(filename: Path) -> str:
    try:
        return filename.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{filename}: cannot read: {exc}") from exc


def _check(document: dict[str, object], *, source: str) -> bool:
    """Print the outcome for one document; whether it is a valid job.

    The decision is ``manifest.check_job``, the one the webhook and the embedded API server's
    admission make, so a job this command accepts is one they accept.
    """
    result = manifest.check_job(document)
    if not result.ok:
        _print_errors(result.errors, source=source)
        return False
    try:
        job = manifest.parse_job(document, source=source)
    except TrainopError as exc:  # not reached: check_job parsed it already
        click.echo(str(exc))
        return False
    click.echo(f"OK {job.kind}/{job.metadata.name or '<unnamed>'}")
    for warning in result.warnings:
        click.echo(f"  warning: {warning}")
    return True


def _print_errors(errors: tuple[FieldError, ...], *, source: str) -> None:
    for error in errors:
        click.echo(f"{source}: {error}")
