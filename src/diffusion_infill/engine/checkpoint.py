"""What a checkpoint, a device and a dtype must look like, checked without torch.

The command line checks its arguments with these before torch is imported (seconds on a
loaded machine), and diffusion_infill.engine.loading checks the same way, so that a folder that is not a
checkpoint is named with what it lacks instead of transformers' first failure.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

EMBEDDED_MODEL = Path(__file__).parent / "model"
DTYPES = ("auto", "float32", "bfloat16", "float16")  # what the model runs in
QUANTIZE = ("none", "int8", "int4")  # how its weights are stored (engine.quantization)
# torchao is an extra (pyproject.toml's [quantize]): `pip install diffusion-infill` leaves it out
TORCHAO_MISSING = "--quantize {mode} needs torchao, which is not installed: pip install 'diffusion-infill[quantize]'"
_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
# One file of each group must be there (transformers' names; sharded weights have an index).
_CHECKPOINT_FILES = {
    "config.json": ("config.json",),
    "weights (model.safetensors or pytorch_model.bin)": (
        "model.safetensors",
        "model.safetensors.index.json",
        "pytorch_model.bin",
        "pytorch_model.bin.index.json",
    ),
    "tokenizer (tokenizer.json or tokenizer.model)": ("tokenizer.json", "tokenizer.model"),
}


class ModelLoadError(RuntimeError):
    """A checkpoint could not be loaded; the message names every place that was tried."""


def device_problem(requested: str | None) -> str | None:
    """Why `requested` is not a device name the engine runs on; None when it is one."""
    if not requested or _DEVICE.match(requested):
        return None
    return f"unknown device {requested!r}: expected auto, cpu, cuda, cuda:N or mps"


def dtype_problem(requested: str | None) -> str | None:
    """Why `requested` is not a dtype the model can be loaded in; None when it is one."""
    if not requested or requested in DTYPES:
        return None
    quantized = " (quantized weights: --quantize int8 or int4)" if re.match(r"^u?int\d+$", requested) else ""
    return f"unknown dtype {requested!r}: expected auto, float32, bfloat16 or float16{quantized}"


def quantize_problem(requested: str | None, device: str | None = None) -> str | None:
    """Why `requested` is not a quantization the weights can be loaded with, or (when `device` names one
    already) not on that device; None when it may be. Only int4 needs CUDA: torchao's int4 kernel is
    CUDA's (engine.quantization); both need torchao, looked up without importing it."""
    if not requested or requested == "none":
        return None
    if requested not in QUANTIZE:
        return f"unknown quantization {requested!r}: expected none, int8 or int4"
    if importlib.util.find_spec("torchao") is None:
        return TORCHAO_MISSING.format(mode=requested)
    if requested == "int4" and device and device != "auto" and not device.startswith("cuda"):
        return f"--quantize int4 needs a CUDA GPU (torchao's int4 kernel runs only there), not {device!r}; use int8"
    return None


def is_path(name: str) -> bool:
    """Whether --model names a directory (else a hub id, looked up in the local cache)."""
    return name.startswith(("/", ".", "~")) or Path(name).expanduser().exists()


def local_directory(name: str | None) -> Path | None:
    """The folder a --model value names (None: the embedded model's); None for a hub id. Raises
    RuntimeError for a `~user` path whose home is unknown."""
    if name is None:
        return EMBEDDED_MODEL
    return Path(name).expanduser() if is_path(name) else None


def directory_problem(directory: Path) -> str | None:
    """Why `directory` is not a checkpoint (missing, or without the files one needs); None when it is one."""
    if not directory.is_dir():
        return f"{directory}: no such directory"
    missing = [what for what, names in _CHECKPOINT_FILES.items() if not any((directory / n).is_file() for n in names)]
    if missing:
        return f"{directory} is not a checkpoint directory: it has no {', no '.join(missing)}"
    return None


def not_cached(hub_id: str) -> str | None:
    """For a hub id with no config in the local hub cache: where it looked and how to get the model."""
    from huggingface_hub import constants as hub_constants  # a third of a second: only for a hub id
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(hub_id, "config.json")
    except ValueError:  # not a valid hub id either
        return f"{hub_id}: no such directory, and not a hub id"
    if isinstance(cached, str):
        return None
    return (
        f"{hub_id}: not in the local hub cache ({hub_constants.HF_HUB_CACHE}); on a machine with internet "
        f"run `hf download {hub_id}` (it fills that cache; set HF_HOME to use another), or pass a "
        "checkpoint directory"
    )


def model_problem(name: str | None) -> str | None:
    """Why --model `name` cannot be loaded offline, as far as the files tell; None when it may be."""
    if name is None:
        return None
    return directory_problem(Path(name).expanduser()) if is_path(name) else not_cached(name)
