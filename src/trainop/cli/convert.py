"""``trainop convert JOB.yaml``: a kubeflow.org/v1 job as a Kubeflow Trainer v2 TrainJob.

Prints, for each job of the file, two YAML documents: the ``TrainJob`` and the namespaced
``TrainingRuntime`` named after the job that reproduces its pods (``engine.convert``; design
note 113). Every v1 field v2 cannot express is named twice, never dropped silently: as a
comment above the TrainJob, so it travels with the YAML, and as a line on stderr
(``FILE: <Kind>/<name>: dropped: <path>: <what v2 does instead>``).

Exit codes (docs/cli.md): 0 when every job converted; 2 for an invalid manifest (the same
field errors ``trainop validate`` prints: the job is read by ``api.manifest.load_job``); 1
when the file cannot be read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import yaml

from trainop.api import manifest
from trainop.engine.convert import Conversion
from trainop.engine.convert import convert as convert_job
from trainop.errors import InvalidJobError, ManifestError

EXIT_INVALID = 2


@click.command("convert")
@click.argument("filename", type=click.Path(dir_okay=False, path_type=Path))
def convert(*, filename: Path) -> None:
    """Print a v1 job as a v2 TrainJob plus the TrainingRuntime that runs its pods."""
    source = str(filename)
    try:
        text = filename.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        click.echo(f"{filename}: cannot read: {exc}", err=True)
        raise SystemExit(1) from exc
    try:
        documents = manifest.parse_documents(text, source=source)
        if not documents:
            raise ManifestError(f"{source}: no documents")
        conversions = [convert_job(document, source=source) for document in documents]
    except InvalidJobError as exc:
        for error in exc.errors:
            click.echo(f"{source}: {_visible(str(error))}", err=True)
        raise SystemExit(EXIT_INVALID) from exc
    except ManifestError as exc:
        click.echo(_visible(str(exc)), err=True)
        raise SystemExit(EXIT_INVALID) from exc
    click.echo("---\n".join(_render(c, documents[i]) for i, c in enumerate(conversions)), nl=False)
    for conversion, document in zip(conversions, documents, strict=True):
        for dropped in conversion.dropped:
            click.echo(f"{source}: {_job(document)}: dropped: {_visible(str(dropped))}", err=True)


def _render(conversion: Conversion, job: dict[str, Any]) -> str:
    """The two YAML documents of one conversion, the dropped fields as comments on top."""
    lines = [f"# {_job(job)} converted by trainop convert (design note 113)."]
    if conversion.dropped:
        lines.append("# Dropped: v1 fields v2 cannot express, and what v2 does instead:")
        lines += [f"# - {_visible(str(dropped))}" for dropped in conversion.dropped]
    documents = [conversion.trainjob, conversion.runtime]
    body = yaml.safe_dump_all(documents, sort_keys=False, explicit_start=False, width=100)
    return "\n".join(lines) + "\n" + body


def _job(document: dict[str, Any]) -> str:
    meta = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
    return _visible(f"{document.get('kind')}/{(meta or {}).get('name')}")


def _visible(text: str) -> str:
    """``text`` on one line with control characters escaped (a comment cannot be broken)."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
