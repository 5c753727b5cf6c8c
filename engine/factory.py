"""Picks the engine a checkpoint can serve: the clamped canvas when it was trained on it,
the instruction path otherwise."""

from __future__ import annotations

from engine.infill import InfillEngine
from engine.instruct import InstructEngine
from engine.loading import LoadedModel
from engine.settings import EngineSettings


def create_engine(loaded: LoadedModel, settings: EngineSettings | None = None) -> InfillEngine | InstructEngine:
    if loaded.canvas_problem:
        return InstructEngine(loaded, settings)
    return InfillEngine(loaded, settings)
