"""diffusion_infill.engine.factory: which engine a checkpoint gets, the autoregressive baseline included, so the
server can serve either (diffusion_infill.bench.replay measures both through it)."""

from __future__ import annotations

from diffusion_infill.engine.baseline.autoregressive import AutoregressiveEngine, FimSpec
from diffusion_infill.engine.completion.infill import InfillEngine
from diffusion_infill.engine.factory import create_engine, is_fim_baseline


def test_a_canvas_checkpoint_gets_the_infill_engine_and_the_baseline_its_own(tiny_loaded, tiny_fim):
    assert isinstance(create_engine(tiny_loaded), InfillEngine)
    engine = create_engine(tiny_fim)
    assert isinstance(engine, AutoregressiveEngine) and engine.calibration is None
    assert "autoregressive baseline" in tiny_fim.canvas_problem  # code actions fall back to deterministic repairs


def test_the_baseline_is_recognised_by_its_fim_json(tmp_path):
    assert not is_fim_baseline(str(tmp_path)) and not is_fim_baseline(None)
    FimSpec().save(tmp_path)
    assert is_fim_baseline(str(tmp_path))
