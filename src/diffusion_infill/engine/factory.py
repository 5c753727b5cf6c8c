"""Picks the engine a checkpoint can serve: the clamped canvas when it was trained on it,
the autoregressive baseline when it is one (it has fim.json), the instruction path otherwise."""

from __future__ import annotations

from pathlib import Path

from diffusion_infill.engine.baseline.autoregressive import SPEC_FILE as FIM_SPEC_FILE
from diffusion_infill.engine.baseline.autoregressive import AutoregressiveEngine, FimModel, load_fim
from diffusion_infill.engine.checkpoint import ModelLoadError
from diffusion_infill.engine.completion.infill import InfillEngine
from diffusion_infill.engine.completion.instruct import InstructEngine
from diffusion_infill.engine.loading import LoadedModel, load
from diffusion_infill.engine.settings import EngineSettings


def is_fim_baseline(name: str | None) -> bool:
    """Whether `name` is a directory holding the autoregressive baseline (src/diffusion_infill/bench/fim_model)."""
    return name is not None and (Path(name).expanduser() / FIM_SPEC_FILE).is_file()


def load_any(
    name: str | None = None,
    device: str | None = None,
    dtype: str | None = None,
    trust_remote_code: bool = False,
    quantize: str | None = None,
) -> LoadedModel | FimModel:
    """A DiffusionGemma checkpoint (diffusion_infill.engine.loading), or the autoregressive baseline when `name`
    is one: the server can then serve either through the same path (diffusion_infill.bench.replay)."""
    if is_fim_baseline(name):
        if quantize and quantize != "none":
            raise ModelLoadError(f"--quantize {quantize} is for DiffusionGemma checkpoints, not the baseline {name}")
        return load_fim(Path(name).expanduser(), device)
    return load(name, device, dtype, trust_remote_code=trust_remote_code, quantize=quantize)


def create_engine(
    loaded: LoadedModel | FimModel, settings: EngineSettings | None = None
) -> InfillEngine | InstructEngine | AutoregressiveEngine:
    if isinstance(loaded, FimModel):
        return AutoregressiveEngine(loaded, settings)
    if loaded.canvas_problem:
        return InstructEngine(loaded, settings)
    return InfillEngine(loaded, settings)
