"""TorchTune in the Torch plugin (spec §3.4): the ``tune run`` command rewrite and its checks.

A TrainJob whose ``trainer.command`` is exactly ``["tune", "run"]`` gets its command completed
from the runtime: an ``--rdzv_endpoint`` when more than one process runs, the recipe and config
chosen from the node count, processes per node, GPUs and the LoRA/QLoRA args, and the runtime
command's path settings (``output_dir`` ...). The model comes from the runtime's name
(``torchtune-llama3.2-1b`` → ``llama3_2/1B``). Called by ``torch``, which passes the numbers.
"""

from __future__ import annotations

from trainop.api.trainer import constants as c
from trainop.engine.trainer import containers as k
from trainop.engine.trainer.containers import as_list, as_map, maps
from trainop.engine.trainer.info import RuntimeInfo, ancestor
from trainop.errors import FieldError

TUNE_RUN = ["tune", "run"]
IMMUTABLE_KEYS = (
    "output_dir",
    "tokenizer.path",
    "checkpointer.checkpoint_dir",
    "tokenizer.merges_file",
)
SUPPORTED_MODELS = ("llama3_2/1B", "llama3_2/3B", "llama3_3/70B", "qwen2_5/1.5B")
MULTI_NODE_MODEL = "llama3_3/70B"
NO_QLORA_MODEL = "qwen2_5/1.5B"
SINGLE_DEVICE_QLORA_MODELS = ("llama3_2/1B", "llama3_2/3B")


def is_torchtune(info: RuntimeInfo) -> bool:
    return as_list((info.trainer or {}).get("command")) == TUNE_RUN


def model(info: RuntimeInfo) -> str:
    """``<a>/<B>`` from a runtime named ``torchtune-<a>-<b>`` (``.`` → ``_``), else empty."""
    name = str(as_map(info.spec.get("runtimeRef")).get("name", ""))
    parts = name.split("-")
    if len(parts) != 3:
        return ""
    return f"{parts[1].replace('.', '_')}/{parts[2].upper()}"


def _args(info: RuntimeInfo) -> list[str]:
    return [str(a) for a in as_list((info.trainer or {}).get("args"))]


def _flag(args: list[str], key: str) -> bool:
    for arg in args:
        name, _, value = arg.partition("=")
        if key in name and value.strip().lower() == "true":
            return True
    return False


def is_lora(info: RuntimeInfo) -> bool:
    return any("model.lora_attn_modules" in a for a in _args(info))


def is_qlora(info: RuntimeInfo) -> bool:
    args = _args(info)
    return _flag(args, "model.quantize_base") and not _flag(args, "model.use_dora")


def _single_device(nodes: int, procs: int | str, gpus: int) -> bool:
    return nodes == 1 and (procs == 1 or gpus == 1)


def recipe(info: RuntimeInfo, nodes: int, procs: int | str, gpus: int) -> tuple[str, str]:
    """(recipe, config suffix) by the first matching row of the §3.4 table."""
    qlora, lora = is_qlora(info), is_lora(info)
    if _single_device(nodes, procs, gpus):
        if qlora:
            return "lora_finetune_single_device", "_qlora_single_device"
        if lora:
            return "lora_finetune_single_device", "_lora_single_device"
        return "full_finetune_single_device", "_full_single_device"
    if nodes == 1 and qlora:
        return "lora_finetune_distributed", "_qlora"
    if nodes == 1 and lora:
        return "lora_finetune_distributed", "_lora"
    if nodes > 1:
        return "full_finetune_distributed", "_full_multinode"
    return "full_finetune_distributed", "_full"


def _runtime_command(info: RuntimeInfo) -> list[str]:
    """The runtime's own trainer ``node`` command (the template now holds the TrainJob's)."""
    template = as_map(as_map(info.runtime.get("spec")).get("template"))
    for job in maps(as_map(template.get("spec")).get("replicatedJobs")):
        if ancestor(job) == c.ANCESTOR_TRAINER:
            spec = as_map(as_map(as_map(job.get("template")).get("spec")).get("template"))
            node = k.named(maps(as_map(spec.get("spec")).get("containers")), c.NODE) or {}
            return [str(x) for x in as_list(node.get("command"))]
    return []


def command(
    info: RuntimeInfo,
    *,
    nodes: int,
    procs: int | str,
    gpus: int,
    master: str,
    port: int = c.TRAINER_PORT,
) -> list[str]:
    """The rewritten ``tune run`` command; ``master`` and ``port`` are the rendezvous's."""
    result = list(TUNE_RUN)
    if nodes > 1 or (isinstance(procs, int) and procs > 1) or (procs == "auto" and gpus > 1):
        result.append(f"--rdzv_endpoint={master}:{port}")
    name, suffix = recipe(info, nodes, procs, gpus)
    result += [name, "--config", model(info) + suffix]
    result += [x for x in _runtime_command(info) if x.partition("=")[0] in IMMUTABLE_KEYS]
    return result


def validate(info: RuntimeInfo, nodes: int, procs: int | str, gpus: int) -> list[FieldError]:
    """The torchtune checks of §3.4 Validate, with upstream's messages."""
    name, errors = model(info), []
    if name not in SUPPORTED_MODELS:
        detail = f"must have a supported pretrained model, invalid model configured: {name}"
        errors.append(FieldError("spec.runtimeRef.name", "Invalid", detail))
    if nodes > 1 and name != MULTI_NODE_MODEL:
        errors.append(FieldError("spec.trainer.numNodes", "Invalid", f"must be 1 for {name} model"))
    qlora, lora = is_qlora(info), is_lora(info)
    if qlora and name == NO_QLORA_MODEL:
        detail = f"QLoRA is not supported for {name} model"
        errors.append(FieldError("spec.runtimeRef.name", "Invalid", detail))
    if qlora and name in SINGLE_DEVICE_QLORA_MODELS and not _single_device(nodes, procs, gpus):
        tail = f"{name} model when using QLoRA"
        detail = f"must be auto or 1 for {tail}"
        errors.append(FieldError("spec.trainer.numProcPerNode", "Invalid", detail))
        detail = f"must have gpu resource with value 1 for {tail}"
        errors.append(FieldError("spec.trainer.resourcesPerNode", "Invalid", detail))
    if nodes > 1 and (lora or qlora):
        detail = "LoRA fine-tuning is not supported for multi-node training in TorchTune"
        errors.append(FieldError("spec.trainer.numNodes", "Invalid", detail))
    for i, arg in enumerate(as_list((info.trainer or {}).get("args"))):
        key = str(arg).partition("=")[0]
        if key in IMMUTABLE_KEYS:
            detail = (
                f'must not set immutable config "{key}" in trainer args; it is managed by the '
                "runtime"
            )
            errors.append(FieldError(f"spec.trainer.args[{i}]", "Invalid", detail))
    return errors
