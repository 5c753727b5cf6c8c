"""Continuing from exported weights: the steps and CPU time already spent carry over, so
`--max-cpu-hours` stays a budget in all; a cooldown ends the budget at a low learning rate."""

from __future__ import annotations

import json

import pytest

from diffusion_infill.engine.tiny import TinyArchitecture
from diffusion_infill.engine.training.train import (
    Cooldown,
    cooldown_factor,
    inherited_progress,
    inherited_recipe,
    save_recipe,
)


def test_a_continuation_counts_on_from_the_recipe(tmp_path):
    (tmp_path / "recipe.json").write_text(json.dumps({"step": 4500, "cpu_hours": 2.181}))
    assert inherited_progress(tmp_path) == (4500, 2.181 * 3600)


def test_a_continuation_keeps_the_recipe_of_the_steps_before_it(tmp_path):
    before = {"step": 9759, "cpu_hours": 3.681, "config": {"precision": "fp32"}}
    (tmp_path / "recipe.json").write_text(json.dumps(before))
    assert inherited_recipe(tmp_path) == before
    assert inherited_recipe(None) is None


def test_what_an_export_writes_is_what_a_continuation_counts_on_from(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    save_recipe(first, 4500, 2.181 * 3600, {"parameters": 5}, None)
    assert inherited_progress(first) == (4500, pytest.approx(2.181 * 3600))
    save_recipe(second, 9000, 5.0 * 3600, {"parameters": 5}, inherited_recipe(first))
    assert inherited_progress(second) == (9000, pytest.approx(5.0 * 3600))
    assert inherited_recipe(second)["continued_from"] == {"step": 4500, "cpu_hours": 2.181, "parameters": 5}


def test_training_from_scratch_starts_at_zero(tmp_path):
    assert inherited_progress(None) == (0, 0.0)
    assert inherited_progress(tmp_path) == (0, 0.0)  # weights without a recipe


def test_the_cooldown_brings_the_learning_rate_down_to_a_tenth_at_the_budget():
    cooldown = Cooldown(end=3600.0, length=1800.0)
    assert cooldown_factor(0.0, cooldown) == 1.0  # before it starts
    assert cooldown_factor(1800.0, cooldown) == 1.0
    assert cooldown_factor(2700.0, cooldown) == pytest.approx(0.55)
    assert cooldown_factor(3600.0, cooldown) == pytest.approx(0.1)
    assert cooldown_factor(4000.0, cooldown) == pytest.approx(0.1)  # past the budget: the floor
    assert cooldown_factor(2700.0, None) == 1.0


def test_a_shape_keeps_the_default_proportions():
    assert TinyArchitecture.of_shape(4, 256) == TinyArchitecture()  # the embedded model's
    wide = TinyArchitecture.of_shape(2, 384)
    assert (wide.num_hidden_layers, wide.hidden_size, wide.intermediate_size) == (2, 384, 1152)
    assert (wide.num_attention_heads, wide.num_key_value_heads) == (6, 3)  # heads 64 wide
    assert TinyArchitecture.of_shape(3, 320).num_key_value_heads == 1  # it must divide 5 query heads
