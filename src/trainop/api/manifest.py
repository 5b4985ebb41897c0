"""Reading and writing job manifests: YAML text or mappings in, typed jobs out, and back.

This is the wire boundary of the API layer: pydantic's errors are translated into
``FieldError``s here, once. Nothing here reads files; callers pass text and say where it came
from (``source``) so that errors name the file.

- ``parse_documents(text)`` → the mappings of a (multi-document) YAML or JSON text;
- ``parse_job(obj)`` → a typed job of the right kind, or ``InvalidJobError`` naming each field
  (an integer outside its Go type in Go's words: ``json: cannot unmarshal number ...``);
- ``load_job(obj)`` → ``parse_job`` plus ``validation.validate``; errors raise;
- ``check_job(obj, old=None)`` → the one admission decision (create, or update against
  ``old``) that ``trainop validate``, the webhook and the embedded API server all run;
- ``dump_job(job)`` → the wire mapping (camelCase, absent fields omitted, unknown
  pod-template fields exactly as they came in).
"""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import ValidationError

from trainop.api import mpi_v2beta1
from trainop.api.fields import INT32_MAX, INT_RANGE_ERROR
from trainop.api.kinds import kind_info
from trainop.api.types import API_VERSION, Job
from trainop.api.validation import Validation, validate, validate_update
from trainop.errors import (
    OMITTED,
    FieldError,
    InvalidJobError,
    ManifestError,
    UnknownKindError,
)

# Wire fields whose values are maps: the segment after one of these is a key, shown in brackets.
_MAP_FIELDS = ("ReplicaSpecs", "replicaStatuses", "labels", "annotations", "minResources")


_INT32_BOUNDS = (INT32_MAX, -(2**31))

MAX_ALIAS_EXPANSION = 10_000  # nodes that aliases may add to a document, beyond its own


class _AliasBombError(yaml.YAMLError):
    """A document whose aliases expand beyond ``MAX_ALIAS_EXPANSION`` nodes."""


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a document whose aliases expand too far.

    Aliases make a node graph share nodes; building Python objects keeps the sharing, but
    every later walk (validation, JSON encoding) expands it: nine aliases of nine aliases of
    ... ("billion laughs") are a few hundred bytes and 10^9 nodes. So before a document is
    constructed, its expanded size is counted (each distinct node once, memoised) and compared
    with its distinct nodes: a document without aliases is never refused.
    """

    def construct_document(self, node: yaml.Node) -> Any:
        distinct, expanded = _node_counts(node, limit=MAX_ALIAS_EXPANSION)
        if expanded - distinct > MAX_ALIAS_EXPANSION:
            raise _AliasBombError(
                f"YAML aliases expand the document by more than {MAX_ALIAS_EXPANSION} nodes "
                f"(refused: an alias bomb?)"
            )
        return super().construct_document(node)


def _node_counts(root: yaml.Node, *, limit: int) -> tuple[int, int]:
    """(distinct nodes, nodes once aliases are expanded), the latter capped near ``limit``
    beyond the former; iterative, so deep documents cannot exhaust the stack."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if not children_done:
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        total = 1 + sum(sizes[id(child)] for child in children)
        sizes[id(node)] = min(total, len(sizes) + limit + 2)
    return len(sizes), sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def parse_documents(text: str, *, source: str = "<input>") -> list[dict[str, Any]]:
    """Every non-empty document of a YAML (or JSON) text; each must be a mapping.

    Safe loading only (no Python objects), and alias expansion is bounded
    (``_BoundedLoader``): an alias bomb is a ``ManifestError`` naming ``source``.
    """
    try:
        loaded = yaml.load_all(text, Loader=_BoundedLoader)  # a SafeLoader subclass
        documents = [d for d in loaded if d is not None]
    except _AliasBombError as exc:
        raise ManifestError(f"{source}: {exc}") from exc
    except RecursionError as exc:
        raise ManifestError(f"{source}: not valid YAML: nested too deeply") from exc
    except yaml.YAMLError as exc:
        raise ManifestError(f"{source}: not valid YAML: {_yaml_problem(exc)}") from exc
    for number, document in enumerate(documents, start=1):
        if not isinstance(document, dict):
            kind = type(document).__name__
            raise ManifestError(f"{source}: document {number} is a {kind}, expected a mapping")
    return documents


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """One line: what is wrong and where (PyYAML's own message spans several lines)."""
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"{problem}{where}"


def parse_job(obj: object, *, source: str | None = None) -> Job:
    """A typed job of the kind ``obj`` declares; ``InvalidJobError`` lists every field problem."""
    if not isinstance(obj, dict):
        raise ManifestError(f"{source or '<input>'}: expected a mapping, got {type(obj).__name__}")
    obj = mpi_v2beta1.as_v1_manifest(obj)  # an MPIJob v2beta1, as v1 reads it (design 100)
    header = _header_errors(obj)
    if header:
        raise InvalidJobError(header, source=source)
    model = kind_info(obj["kind"]).model
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise InvalidJobError(_field_errors(exc), source=source) from exc


def load_job(obj: object, *, source: str | None = None) -> Job:
    """Parse and validate; raise ``InvalidJobError`` unless the job is valid."""
    job = parse_job(obj, source=source)
    result = validate(job)
    if not result.ok:
        raise InvalidJobError(result.errors, source=source)
    return job


def check_job(obj: object, old: object = None) -> Validation:
    """The admission decision for a job mapping, never raising on bad input.

    Create (``old`` is None): parse, default and ``validate``. Update: ``validate_update``
    against the stored ``old`` (immutable fields); an ``old`` that does not parse (stored
    before any check judged it) lets its owner repair it, judged on its own. A mapping that
    does not parse is refused with the field errors of the parse.
    """
    try:
        new = parse_job(obj)
    except InvalidJobError as exc:
        return Validation(exc.errors)
    except ManifestError as exc:
        return Validation((FieldError("<root>", "Invalid", str(exc)),))
    if old is None:
        return validate(new)
    try:
        previous = parse_job(old)
    except (InvalidJobError, ManifestError):
        return validate(new)
    return validate_update(previous, new)


def dump_job(job: Job) -> dict[str, Any]:
    """The wire form of ``job``: camelCase, absent fields omitted, mappings as they came in."""
    return job.model_dump(mode="json", by_alias=True, exclude_none=True)


def _header_errors(obj: dict[str, Any]) -> list[FieldError]:
    errors = []
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if api_version != API_VERSION:
        detail = f'supported values: "{API_VERSION}"'
        errors.append(FieldError("apiVersion", "NotSupported", detail, value=api_version))
    if not isinstance(kind, str) or not kind:
        errors.append(FieldError("kind", "Required", "must be one of the job kinds"))
    else:
        try:
            info = kind_info(kind)
        except UnknownKindError as exc:
            errors.append(FieldError("kind", "NotSupported", str(exc)))
        else:
            if info.kind != kind:
                errors.append(
                    FieldError("kind", "NotSupported", f"did you mean {info.kind!r}?", value=kind)
                )
    return errors


def _field_errors(exc: ValidationError) -> list[FieldError]:
    found = []
    for error in exc.errors():
        path = _render_loc(error["loc"])
        go_type = _go_int_type(error)
        if go_type is not None:
            found.append(_out_of_range(path, error["input"], go_type))
        else:
            kind, detail = _classify(error["type"], error["msg"])
            found.append(FieldError(path, kind, detail, value=_shown_input(error)))
    return found


def _go_int_type(error: Any) -> str | None:
    """``int32``/``int64`` when ``error`` is an integer outside that Go type (``fields``)."""
    context = error.get("ctx") or {}
    if error["type"] == INT_RANGE_ERROR:
        return str(context.get("go_type", "int64"))
    bound = context.get("le", context.get("ge"))
    if error["type"] in ("less_than_equal", "greater_than_equal") and bound in _INT32_BOUNDS:
        return "int32"
    return None


def _out_of_range(path: str, value: object, go_type: str) -> FieldError:
    """kube's words (Go's JSON decoder) for a number its field's Go type cannot hold."""
    decoding = f"json: cannot unmarshal number {value} into Go value of type {go_type}"
    detail = f"Invalid value: {value}: {decoding}"
    return FieldError(path, "Invalid", detail)


def _shown_input(error: Any) -> object:
    """The bad value a field error shows: the input when it is a scalar (kube prints it),
    ``OMITTED`` for a mapping or list (too long to repeat) or a missing field."""
    value = error.get("input")
    if error["type"] == "missing" or not isinstance(value, str | int | float | bool):
        return OMITTED
    return value


def _classify(error_type: str, message: str) -> tuple[str, str]:
    if error_type == "missing":
        return "Required", "must be specified"
    if error_type == "extra_forbidden":
        return "Forbidden", "unknown field"
    if error_type in ("literal_error", "enum"):
        return "NotSupported", message
    return "Invalid", message


def _render_loc(loc: tuple[int | str, ...]) -> str:
    text = ""
    previous = ""
    for part in loc:
        if isinstance(part, int) or previous.endswith(_MAP_FIELDS):
            text += f"[{part}]"
        else:
            text = f"{text}.{part}" if text else part
        previous = str(part)
    return text
