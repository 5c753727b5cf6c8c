"""Finding and loading a DiffusionGemma checkpoint (the embedded one by default), offline."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from huggingface_hub import constants as hub_constants
from huggingface_hub import try_to_load_from_cache
from safetensors import SafetensorError
from transformers import AutoTokenizer, DiffusionGemmaForBlockDiffusion
from transformers.utils import logging as transformers_logging

from engine.completion.canvas import CanvasSpec
from engine.tokens import SpecialIds

EMBEDDED_MODEL = Path(__file__).parent / "model"


class ModelLoadError(RuntimeError):
    """A checkpoint could not be loaded; the message names every place that was tried."""


@dataclass
class LoadedModel:
    model: DiffusionGemmaForBlockDiffusion
    tokenizer: object  # a transformers tokenizer
    spec: CanvasSpec | None  # None: not trained on the clamped canvas, use the instruction path
    ids: SpecialIds | None
    source: str

    @property
    def canvas_problem(self) -> str | None:
        """Why the clamped-canvas engines cannot use this checkpoint; None when they can."""
        if self.spec is None or self.ids is None:
            return f"{self.source} was not trained on the infill canvas"
        return None

    @property
    def device(self) -> torch.device:
        return self.model.device


def pick_device(requested: str | None) -> torch.device:
    """The requested device, checked here so that a missing GPU is one clear error; auto: CUDA when available."""
    if not requested or requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(requested)
    except RuntimeError:
        raise ModelLoadError(f"unknown device {requested!r}: expected auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError(f"device {requested!r}: torch {torch.__version__} sees no CUDA GPU (a CPU-only build, "
                             "or no GPU visible); use device cpu or auto")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise ModelLoadError(f"device {requested!r}: only {torch.cuda.device_count()} CUDA GPU(s) visible")
    return device


def pick_dtype(requested: str | None, device: torch.device) -> torch.dtype:
    if not requested or requested == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    dtype = getattr(torch, requested, None)
    if not isinstance(dtype, torch.dtype):
        raise ModelLoadError(f"unknown dtype {requested!r}: expected auto, float32, bfloat16 or float16")
    return dtype


def _not_cached(candidate: str) -> str | None:
    """For a hub id with no config in the local hub cache: where it looked and how to get the model."""
    if candidate.startswith(("/", ".", "~")) or Path(candidate).is_dir():
        return None
    try:
        cached = try_to_load_from_cache(candidate, "config.json")
    except ValueError:  # not a valid hub id either
        return None
    if isinstance(cached, str):
        return None
    return (f"{candidate}: not in the local hub cache ({hub_constants.HF_HUB_CACHE}); on a machine with internet "
            f"run `hf download {candidate}` (it fills that cache; set HF_HOME to use another), or pass a "
            "checkpoint directory")


def _candidates(name: str | None) -> list[str]:
    if name is None:
        return [str(EMBEDDED_MODEL)]
    path = Path(name).expanduser()
    if path.exists() or name.startswith((".", "/", "~")):
        return [str(path)]
    return [name]  # a hub id, looked up in the local cache only


@contextmanager
def _hub_offline(offline: bool) -> Iterator[None]:
    """huggingface_hub's offline mode while loading, when nothing may be downloaded.

    `local_files_only` is not enough: looking a hub id up in the cache, huggingface_hub 2.x
    still builds request headers, and for them fetches a registry from the Hub (once per
    process). Its offline mode, read at each request, stops every request.
    """
    previous = hub_constants.HF_HUB_OFFLINE
    hub_constants.HF_HUB_OFFLINE = previous or offline
    try:
        yield
    finally:
        hub_constants.HF_HUB_OFFLINE = previous


def load(name: str | None = None, device: str | None = None, dtype: str | None = None,
         trust_remote_code: bool = False, allow_download: bool = False) -> LoadedModel:
    """Loads a checkpoint by path or hub id; nothing is downloaded unless `allow_download`."""
    target = pick_device(device)
    weights = pick_dtype(dtype, target)
    transformers_logging.disable_progress_bar()  # stderr belongs to the editor's log
    errors = []
    for candidate in _candidates(name):
        if candidate.startswith(("/", ".", "~")) and not Path(candidate).is_dir():
            errors.append(f"{candidate}: no such directory")
            continue
        if not allow_download and (missing := _not_cached(candidate)):
            errors.append(missing)
            continue
        try:
            options = dict(local_files_only=not allow_download, trust_remote_code=trust_remote_code)
            with _hub_offline(not allow_download):
                tokenizer = AutoTokenizer.from_pretrained(candidate, **options)
                model = DiffusionGemmaForBlockDiffusion.from_pretrained(
                    candidate, dtype=weights, **options
                ).to(target)
        except (OSError, ValueError, RuntimeError, KeyError, TypeError, SafetensorError) as error:  # truncated weights
            errors.append(f"{candidate}: {type(error).__name__}: {str(error).splitlines()[0]}")
            continue
        vocab = model.config.text_config.vocab_size
        if len(tokenizer) > vocab:  # its ids past the embedding would fail in the first forward pass
            errors.append(f"{candidate}: the tokenizer has {len(tokenizer)} tokens and the model {vocab}: "
                          "they do not belong together")
            continue
        model.eval()
        directory = Path(candidate)
        spec = CanvasSpec.load(directory) if directory.is_dir() else None
        ids = SpecialIds.from_tokenizer(tokenizer) if spec else None
        return LoadedModel(model, tokenizer, spec, ids, candidate)
    where = "" if allow_download else " (offline: local directories and the local hub cache only)"
    raise ModelLoadError("could not load a DiffusionGemma checkpoint" + where + "; tried " + "; ".join(errors))
