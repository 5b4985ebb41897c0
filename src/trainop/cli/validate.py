"""``trainop validate -f FILE``: the verdict the API server and the webhook would give, offline.

Each document of the (multi-document) YAML file is judged as a create of it would be:
``admission.verdict.judge_manifest``, the very function the embedded API server runs (the
metadata rules, the kind's CRD schema with its pruning and defaults, then the webhook's check),
so a job this command accepts is one they store and one it refuses they refuse.

Unknown fields are judged as ``--field-validation`` says, the API server's ``fieldValidation``
and kubectl's ``--validate``: ``Strict`` (kubectl's default, so this command's) refuses them,
``Warn`` prunes them with a warning (kube-apiserver's default when a client names no mode),
``Ignore`` prunes them silently. The mode is said on stderr before the first verdict.

Trainer v2's kinds (``TrainJob``, ``TrainingRuntime``, ``ClusterTrainingRuntime``) are judged
by ``admission.trainer.judge_manifest``, the embedded API server's checks for them: their CRD
schema, the API's rules and the webhooks' (``validate_trainjob``, ``runtime_errors``); a
TrainJob's runtime is looked for among the file's documents, and when it is not there the
rules that need it are skipped with a warning.

A valid job prints ``OK <Kind>/<name>`` plus its warnings; an invalid one prints one line per
field error in kube-apiserver's words (``FieldError.__str__``), ``FILE: <path>: <body>``
(``job.yaml: spec.jobMode: Required value: must be specified``). Exit codes (docs/cli.md): 0
when every job is valid; 2 for an invalid manifest, whatever its shape (not YAML, not a
mapping, no documents, a field error), never a traceback; 1 when the file cannot be read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from trainop.api import manifest
from trainop.api.trainer import constants as c
from trainop.cluster.apiserver.admission import trainer, verdict
from trainop.errors import FieldError, ManifestError

EXIT_INVALID = 2
_MODE_NOTES = {
    verdict.STRICT: "unknown fields are errors, as kubectl's default --validate=strict",
    verdict.WARN: "unknown fields are pruned with a warning, as kube-apiserver's default",
    verdict.IGNORE: "unknown fields are pruned silently",
}


@click.command("validate")
@click.option(
    "-f",
    "--filename",
    "filename",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="YAML file with one or more job manifests.",
)
@click.option(
    "--field-validation",
    "field_validation",
    type=click.Choice(verdict.FIELD_VALIDATION_MODES),
    default=verdict.KUBECTL_DEFAULT_MODE,
    show_default=True,
    help=(
        "Unknown fields, as the API server's fieldValidation: Strict refuses them, Warn "
        "prunes them with a warning, Ignore prunes them silently."
    ),
)
def validate(*, filename: Path, field_validation: str) -> None:
    """Validate the jobs in a manifest file."""
    source = str(filename)
    try:
        text = filename.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        click.echo(f"{filename}: cannot read: {exc}", err=True)
        raise SystemExit(1) from exc
    try:
        documents = manifest.parse_documents(text, source=source)
    except ManifestError as exc:
        click.echo(str(exc), err=True)
        raise SystemExit(EXIT_INVALID) from exc
    if not documents:
        click.echo(f"{source}: no documents", err=True)
        raise SystemExit(EXIT_INVALID)
    click.echo(f"field validation: {field_validation} ({_MODE_NOTES[field_validation]})", err=True)
    runtimes = [d for d in documents if d.get("kind") in c.RUNTIME_KINDS]
    failed = [
        not _check(d, source=source, mode=field_validation, runtimes=runtimes) for d in documents
    ]
    if any(failed):
        raise SystemExit(EXIT_INVALID)


def _check(
    document: dict[str, Any], *, source: str, mode: str, runtimes: list[dict[str, Any]]
) -> bool:
    """Print the outcome for one document; whether it is a valid job."""
    if trainer.is_trainer_document(document):
        outcome = trainer.judge_manifest(document, field_validation=mode, runtimes=runtimes)
    else:
        outcome = verdict.judge_manifest(document, field_validation=mode)
    for path in outcome.unknown_fields:
        detail = f"{verdict.unknown_field_message(path)} (--field-validation {mode})"
        _print_errors((FieldError(path, "Forbidden", detail),), source=source)
    _print_errors(outcome.errors, source=source)
    if not outcome.ok:
        return False
    click.echo(f"OK {document['kind']}/{_visible(_name(document))}")
    for warning in outcome.warnings:
        click.echo(f"  warning: {_visible(warning)}")
    return True


def _name(document: dict[str, object]) -> str:
    meta = document.get("metadata")
    if not isinstance(meta, dict):
        return "<unnamed>"
    return str(
        meta.get("name")
        or (f"{meta['generateName']}*" if meta.get("generateName") else "<unnamed>")
    )


def _print_errors(errors: tuple[FieldError, ...], *, source: str) -> None:
    for error in errors:
        click.echo(f"{source}: {_visible(str(error))}")


def _visible(text: str) -> str:
    """``text`` with control characters escaped (``\\x1e``), as Go's ``%q`` shows them: a
    field name of the manifest can neither break the line nor drive the terminal."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
