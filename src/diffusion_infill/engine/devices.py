"""The device and dtype a model runs on, chosen once: what was asked for, checked against what torch
sees (a missing GPU is one clear error), or by detection for auto. Imports torch but not
transformers, so the command line asks torch about CUDA before the model stack loads."""

from __future__ import annotations

import torch

from diffusion_infill.engine.checkpoint import ModelLoadError, device_problem, dtype_problem
from diffusion_infill.engine.settings import default_threads


def start_torch(seed: int, threads: int | None = None) -> None:
    """Seeds torch and limits its CPU threads (None: engine.settings.default_threads), once per process,
    before a model loads."""
    torch.manual_seed(seed)
    torch.set_num_threads(threads or default_threads())


def pick_device(requested: str | None) -> torch.device:
    """The requested device, checked here so that a missing GPU is one clear error; auto: CUDA when available."""
    if not requested or requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if problem := device_problem(requested):
        raise ModelLoadError(problem)
    device = torch.device(requested)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError(
            f"device {requested!r}: torch {torch.__version__} sees no CUDA GPU (a CPU-only build, "
            "or no GPU visible); use device cpu or auto"
        )
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise ModelLoadError(f"device {requested!r}: only {torch.cuda.device_count()} CUDA GPU(s) visible")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ModelLoadError(
            f"device {requested!r}: torch {torch.__version__} sees no MPS device; use device cpu or auto"
        )
    return device


def pick_dtype(requested: str | None, device: torch.device) -> torch.dtype:
    if not requested or requested == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if problem := dtype_problem(requested):
        raise ModelLoadError(problem)
    return getattr(torch, requested)
