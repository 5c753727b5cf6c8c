"""Continuing from exported weights (engine.training.train.inherited_progress): the steps
and CPU time already spent carry over, so `--max-cpu-hours` stays a budget in all."""

from __future__ import annotations

import json

from engine.loading import EMBEDDED_MODEL
from engine.training.train import inherited_progress


def test_a_continuation_counts_on_from_the_recipe(tmp_path):
    (tmp_path / "recipe.json").write_text(json.dumps({"step": 4500, "cpu_hours": 2.181}))
    assert inherited_progress(tmp_path) == (4500, 2.181 * 3600)


def test_the_embedded_model_carries_its_recipe():
    step, cpu_seconds = inherited_progress(EMBEDDED_MODEL)
    assert step > 0 and cpu_seconds > 0


def test_training_from_scratch_starts_at_zero(tmp_path):
    assert inherited_progress(None) == (0, 0.0)
    assert inherited_progress(tmp_path) == (0, 0.0)  # weights without a recipe
