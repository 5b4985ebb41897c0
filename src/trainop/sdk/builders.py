"""Job manifests built in code: ``build_job`` for every kind, ``function_job`` from a function.

``build_job`` lays out any kind's replica types around one container and returns the wire
manifest (a dict), validated by ``api.manifest.load_job`` so a layout the kind rejects fails
here, naming the field. Required enum fields of a kind's spec that the caller leaves out
(MXJob's ``jobMode``) take their suggested (or first allowed) value, read from the kind's
model — no kind names are spelled here.

``function_job`` is upstream's ``create_job(train_func=...)``: the function's dedented source
plus a call line (``fn()`` or ``fn(<repr of parameters>)``) written to a temporary file and run
by ``bash -c`` with ``python -u`` or ``torchrun``. Only the kinds in ``FUNCTION_LAYOUTS`` can be
built from a function (upstream: TFJob and PyTorchJob). On a trainop local cluster, where pods
are processes of this host, ``python`` is this interpreter and ``torchrun`` is used only for
several processes per worker (one process per worker needs no launcher: the operator already
sets ``RANK``, ``WORLD_SIZE`` and ``MASTER_ADDR``/``MASTER_PORT``).
"""

from __future__ import annotations

import inspect
import shlex
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args, get_origin

from trainop.api import fields, manifest
from trainop.api.kinds import KindInfo
from trainop.sdk import constants
from trainop.sdk.errors import InvalidArgumentError


@dataclass(frozen=True, slots=True)
class Container:
    """The one container every replica runs (``name`` defaults to the kind's container)."""

    image: str
    command: Sequence[str] = ()
    args: Sequence[str] = ()
    env: Sequence[Mapping[str, Any]] = ()
    resources: Mapping[str, Any] | None = None
    name: str | None = None

    def wire(self, info: KindInfo) -> dict[str, Any]:
        body: dict[str, Any] = {"name": self.name or info.default_container, "image": self.image}
        for key, value in (("command", self.command), ("args", self.args), ("env", self.env)):
            if value:
                body[key] = [dict(v) if isinstance(v, Mapping) else v for v in value]
        if self.resources:
            body["resources"] = dict(self.resources)
        return body


def build_job(
    *,
    info: KindInfo,
    name: str,
    replicas: Mapping[str, int],
    container: Container,
    namespace: str | None = None,
    restart_policy: str | None = None,
    annotations: Mapping[str, str] | None = None,
    spec_fields: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A valid manifest of ``info``'s kind; ``InvalidJobError`` if the kind rejects the layout."""
    template: dict[str, Any] = {"spec": {"containers": [container.wire(info)]}}
    if annotations:
        template["metadata"] = {"annotations": dict(annotations)}
    specs: dict[str, Any] = {}
    for replica_type, count in replicas.items():
        specs[replica_type] = {"replicas": count, "template": template}
        if restart_policy:
            specs[replica_type]["restartPolicy"] = restart_policy
    spec = {**_required_enum_fields(info), **(spec_fields or {}), info.replica_specs_field: specs}
    metadata = {"name": name} | ({"namespace": namespace} if namespace else {})
    job = {"apiVersion": constants.API_VERSION, "kind": info.kind, "metadata": metadata}
    job["spec"] = spec
    manifest.load_job(job, source=f"{info.kind}/{name}")
    return job


def _required_enum_fields(info: KindInfo) -> dict[str, Any]:
    """Required fields of the kind's spec model that a builder can fill: their ``Suggested``
    value, else (``Literal`` fields) their first allowed value."""
    spec_model = info.model.model_fields["spec"].annotation
    found: dict[str, Any] = {}
    for key, spec_field in getattr(spec_model, "model_fields", {}).items():
        if not spec_field.is_required():
            continue
        suggested = [m.value for m in spec_field.metadata if isinstance(m, fields.Suggested)]
        if suggested:
            found[spec_field.alias or key] = suggested[0]
        elif get_origin(spec_field.annotation) is Literal:
            found[spec_field.alias or key] = get_args(spec_field.annotation)[0]
    return found


@dataclass(frozen=True, slots=True)
class Layout:
    """Replica counts and spec fields of a function job, and whether it needs torchrun."""

    replicas: dict[str, int]
    spec_fields: dict[str, Any] = field(default_factory=dict)
    torchrun: bool = False


@dataclass(frozen=True, slots=True)
class FunctionJobArgs:
    """The ``create_job`` arguments that shape a job built from a function or an image."""

    num_workers: int = 1
    num_procs_per_worker: int | None = None
    num_chief_replicas: int | None = None
    num_ps_replicas: int | None = None


def _tf_layout(args: FunctionJobArgs) -> Layout:
    if args.num_procs_per_worker:
        raise InvalidArgumentError("TFJob doesn't support `num_procs_per_worker`")
    replicas = {}
    if args.num_chief_replicas:
        replicas[constants.REPLICA_TYPE_CHIEF] = args.num_chief_replicas
    if args.num_ps_replicas:
        replicas[constants.REPLICA_TYPE_PS] = args.num_ps_replicas
    replicas[constants.REPLICA_TYPE_WORKER] = args.num_workers
    return Layout(replicas)


def _pytorch_layout(args: FunctionJobArgs) -> Layout:
    if args.num_chief_replicas is not None or args.num_ps_replicas is not None:
        raise InvalidArgumentError(
            "PyTorchJob doesn't support `num_chief_replicas` or `num_ps_replicas`"
        )
    replicas = {constants.REPLICA_TYPE_MASTER: 1}
    if args.num_workers > 1:
        replicas[constants.REPLICA_TYPE_WORKER] = args.num_workers - 1
    fields: dict[str, Any] = {}
    if args.num_procs_per_worker:
        fields["nprocPerNode"] = str(args.num_procs_per_worker)
    torchrun = args.num_workers > 1 or bool(args.num_procs_per_worker)
    return Layout(replicas, fields, torchrun)


# The kinds a function or an image can become, and how (upstream: TFJob and PyTorchJob).
FUNCTION_LAYOUTS: Mapping[str, Callable[[FunctionJobArgs], Layout]] = {
    constants.TFJOB_KIND: _tf_layout,
    constants.PYTORCHJOB_KIND: _pytorch_layout,
}


@dataclass(frozen=True, slots=True)
class Program:
    """What the container runs: a function (with parameters) and packages to install first."""

    train_func: Callable[..., Any] | None = None
    parameters: Mapping[str, Any] | None = None
    packages_to_install: Sequence[str] = ()
    pip_index_url: str = constants.DEFAULT_PIP_INDEX_URL


def function_job(
    *,
    info: KindInfo,
    name: str,
    namespace: str | None,
    base_image: str,
    program: Program,
    args: FunctionJobArgs,
    env_vars: Sequence[Mapping[str, Any]] = (),
    resources_per_worker: Mapping[str, Any] | None = None,
    local_python: str | None = None,
) -> dict[str, Any]:
    """The manifest of upstream's ``create_job(train_func=... | base_image=...)``."""
    layout_of = FUNCTION_LAYOUTS.get(info.kind)
    if layout_of is None:
        raise InvalidArgumentError(
            f"Job kind {info.kind} can't be created using function or image; "
            f"use one of {', '.join(FUNCTION_LAYOUTS)}"
        )
    if args.num_workers < 1:
        raise InvalidArgumentError("Job must have at least one worker (`num_workers` >= 1)")
    layout = layout_of(args)
    command: Sequence[str] = ()
    container_args: Sequence[str] = ()
    if program.train_func is not None:
        command = constants.DEFAULT_COMMAND
        container_args = [script(program, entrypoint=_entrypoint(layout, args, local_python))]
    container = Container(
        image=base_image,
        command=command,
        args=container_args,
        env=env_vars,
        resources=worker_resources(resources_per_worker),
    )
    return build_job(
        info=info,
        name=name,
        namespace=namespace,
        replicas=layout.replicas,
        container=container,
        annotations={constants.ISTIO_SIDECAR_INJECTION: "false"},
        spec_fields=layout.spec_fields,
    )


def _entrypoint(layout: Layout, args: FunctionJobArgs, local_python: str | None) -> str:
    if local_python is None:
        return constants.ENTRYPOINT_TORCH if layout.torchrun else constants.ENTRYPOINT_PYTHON
    python = shlex.quote(local_python)
    if layout.torchrun and args.num_procs_per_worker:
        return f"{python} -m torch.distributed.run"
    return f"{python} -u"


def script(program: Program, *, entrypoint: str) -> str:
    """The ``bash -c`` script: install packages, write the function and its call, run it."""
    func = program.train_func
    if func is None or not callable(func):
        raise InvalidArgumentError(f"Training function must be callable, got {func!r}")
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError) as exc:
        raise InvalidArgumentError(
            f"the source of {func!r} is not available (define it in a file)"
        ) from exc
    call = (
        f"{func.__name__}({program.parameters!r})" if program.parameters else f"{func.__name__}()"
    )
    python = entrypoint.split()[0] if entrypoint.endswith(" -u") else "python"
    lines = [*_install(program, python), "program_path=$(mktemp -d)"]
    lines.append("cat > \"$program_path/ephemeral_script.py\" << 'EOM'")
    lines += [source.rstrip("\n"), "", call, "EOM"]
    lines.append(f'{entrypoint} "$program_path/ephemeral_script.py"')
    return "\n".join(lines) + "\n"


def _install(program: Program, python: str) -> list[str]:
    if not program.packages_to_install:
        return []
    packages = " ".join(shlex.quote(p) for p in program.packages_to_install)
    return [
        f"if ! {python} -m pip --version >/dev/null 2>&1; then",
        f"  {python} -m ensurepip || {python} -m ensurepip --user"
        " || apt-get install -y python3-pip",
        "fi",
        f"PIP_DISABLE_PIP_VERSION_CHECK=1 {python} -m pip install --quiet "
        f"--no-warn-script-location --index-url {shlex.quote(program.pip_index_url)} {packages}",
    ]


def env_list(env_vars: Mapping[str, Any] | Sequence[Any] | None) -> list[dict[str, Any]]:
    """``env_vars`` as wire env entries: a dict of name → value, or a list of entries (dicts
    or objects with ``name``/``value`` such as ``kubernetes.client.V1EnvVar``)."""
    if not env_vars:
        return []
    if isinstance(env_vars, Mapping):
        return [{"name": str(k), "value": str(v)} for k, v in env_vars.items()]
    entries = []
    for entry in env_vars:
        if isinstance(entry, Mapping):
            entries.append(dict(entry))
        elif hasattr(entry, "name"):
            entries.append({"name": entry.name, "value": str(getattr(entry, "value", "") or "")})
        else:
            raise InvalidArgumentError(f"env_vars entries must be dicts or V1EnvVar, got {entry!r}")
    return entries


def worker_resources(resources: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Upstream's ``resources_per_worker``: lower-cased keys, ``gpu`` → ``nvidia.com/gpu``,
    used as both requests and limits. An object with ``requests``/``limits`` passes as is."""
    if resources is None:
        return None
    if not isinstance(resources, Mapping):
        requests = getattr(resources, "requests", None)
        limits = getattr(resources, "limits", None)
        return {k: v for k, v in (("requests", requests), ("limits", limits)) if v}
    amounts = {}
    for key, value in resources.items():
        lowered = str(key).lower()
        amounts["nvidia.com/gpu" if lowered == "gpu" else lowered] = value
    return {"requests": dict(amounts), "limits": dict(amounts)}
