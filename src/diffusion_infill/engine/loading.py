"""Finding and loading a DiffusionGemma checkpoint (the embedded one by default), offline."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch
from huggingface_hub import constants as hub_constants
from safetensors import SafetensorError
from transformers import AutoTokenizer, DiffusionGemmaForBlockDiffusion
from transformers.utils import logging as transformers_logging

from diffusion_infill.engine.checkpoint import (
    EMBEDDED_MODEL,
    ModelLoadError,
    directory_problem,
    is_path,
    local_directory,
    not_cached,
)
from diffusion_infill.engine.completion.canvas import CanvasSpec
from diffusion_infill.engine.devices import pick_device, pick_dtype
from diffusion_infill.engine.quantization import loading_options, quantized_dtype
from diffusion_infill.engine.tokens import SpecialIds

__all__ = ["EMBEDDED_MODEL", "LoadedModel", "ModelLoadError", "load", "pick_device", "pick_dtype"]


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


def _problem(candidate: str, allow_download: bool) -> str | None:
    """Why `candidate` cannot be loaded, as far as its files tell (engine.checkpoint); None when it may be."""
    if is_path(candidate):
        return directory_problem(Path(candidate))
    return None if allow_download else not_cached(candidate)


def _candidates(name: str | None) -> list[str]:
    local = local_directory(name)
    return [str(local)] if local is not None else [name]  # else a hub id, in the local cache only


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


def load(
    name: str | None = None,
    device: str | None = None,
    dtype: str | None = None,
    trust_remote_code: bool = False,
    allow_download: bool = False,
    quantize: str | None = None,
) -> LoadedModel:
    """Loads a checkpoint by path or hub id, its weights quantized as `quantize` (none, int8, int4:
    engine.quantization); nothing is downloaded unless `allow_download`."""
    target = pick_device(device)
    weights = pick_dtype(quantized_dtype(quantize, dtype), target)
    quantized = loading_options(quantize, target, weights)
    if quantized:  # quantized where the weights will run (int4's packing is CUDA's)
        quantized["device_map"] = str(target)
    transformers_logging.disable_progress_bar()  # stderr belongs to the editor's log
    errors = []
    for candidate in _candidates(name):
        if problem := _problem(candidate, allow_download):
            errors.append(problem)
            continue
        try:
            options = dict(local_files_only=not allow_download, trust_remote_code=trust_remote_code)
            with _hub_offline(not allow_download):
                tokenizer = AutoTokenizer.from_pretrained(candidate, **options)
                # use_kernels=False: by default transformers replaces layers with kernel code fetched
                # from the Hub on a GPU (and again at each train()/eval() switch)
                model = DiffusionGemmaForBlockDiffusion.from_pretrained(
                    candidate, dtype=weights, use_kernels=False, **quantized, **options
                ).to(target)
        except (OSError, ValueError, RuntimeError, KeyError, TypeError, SafetensorError) as error:  # truncated weights
            errors.append(f"{candidate}: {type(error).__name__}: {str(error).splitlines()[0]}")
            continue
        vocab = model.config.text_config.vocab_size
        if len(tokenizer) > vocab:  # its ids past the embedding would fail in the first forward pass
            errors.append(
                f"{candidate}: the tokenizer has {len(tokenizer)} tokens and the model {vocab}: "
                "they do not belong together"
            )
            continue
        model.eval()
        directory = Path(candidate)
        spec = CanvasSpec.load(directory) if directory.is_dir() else None
        ids = SpecialIds.from_tokenizer(tokenizer) if spec else None
        return LoadedModel(model, tokenizer, spec, ids, candidate)
    where = "" if allow_download else " (offline: local directories and the local hub cache only)"
    raise ModelLoadError("could not load a DiffusionGemma checkpoint" + where + "; tried " + "; ".join(errors))
