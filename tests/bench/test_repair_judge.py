"""The model's record in repairs: the counting, on the deterministic fix against itself and on a window."""

from __future__ import annotations

from diffusion_infill.bench.json_corpora import CORPORA
from diffusion_infill.bench.repair_judge import WINDOW, _around_damage, judge_json
from diffusion_infill.engine.repair.fixes import Fixer


def test_the_same_fixer_twice_differs_in_no_case():
    record = judge_json(Fixer(None), Fixer(None), cases=1, seed=3)
    assert record.compared == len(CORPORA) and (record.cases, record.right, record.wrong) == (0, 0, 0)


def test_the_window_holds_the_damaged_lines_and_the_same_lines_undamaged():
    before = [f"line {index}" for index in range(30)]
    after = before[:15] + before[16:]  # line 15 dropped
    damaged, original = _around_damage(before, after)
    assert damaged.split("\n") == after[15 - WINDOW : 15 + WINDOW]
    assert original.split("\n") == before[15 - WINDOW : 16 + WINDOW]
