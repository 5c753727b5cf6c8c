"""diffusion_infill.bench.metrics: what counts as a duplicated closer, and the aggregate of a run."""

from __future__ import annotations

from diffusion_infill.bench.metrics import aggregate, duplicated_closer, percentile, step_times


def test_an_insertion_that_repeats_the_closer_after_the_cursor_is_duplicated():
    assert duplicated_closer("x, y)", ")\n", "x, y")


def test_an_insertion_that_stops_before_the_closer_is_not():
    assert not duplicated_closer("x, y", ")\n", "x, y")


def test_a_closer_the_original_also_had_is_not_counted():
    assert not duplicated_closer("f(x)", ")\n", "f(x)")


def test_percentiles_pick_from_the_values():
    assert percentile([3, 1, 2], 0.5) == 2 and percentile([1, 2, 3, 4], 0.95) == 4


def test_aggregate_counts_rates_and_breaks_down_by_kind():
    row = {
        "exact": True,
        "similarity": 1.0,
        "valid": True,
        "duplicated_closer": False,
        "forward_passes": 4,
        "tokens_per_forward": 0.5,
        "prefill_ms": 1.0,
        "first_draft_ms": 2.0,
        "step_ms": [3.0],
        "total_ms": 10.0,
        "kind": "line",
        "text": "abcd",
        "expected": "abcdefgh",
    }
    rows = [row, {**row, "exact": False, "similarity": 0.5, "duplicated_closer": True, "kind": "span", "text": " "}]
    result = aggregate(rows)
    assert result["exact_match"] == 0.5 and result["duplicated_closer_rate"] == 0.5
    assert result["edit_similarity_mean"] == 0.75
    assert result["by_kind"]["span"]["exact_match"] == 0.0


def test_aggregate_compares_the_insertion_length_with_the_truth():
    row = {
        "exact": False,
        "similarity": 0.5,
        "valid": True,
        "duplicated_closer": False,
        "forward_passes": 4,
        "tokens_per_forward": 0.5,
        "prefill_ms": 1.0,
        "first_draft_ms": 2.0,
        "step_ms": [3.0],
        "total_ms": 10.0,
        "kind": "line",
        "text": "abcd",
        "expected": "abcdefgh",
    }
    result = aggregate([row, {**row, "text": "  "}])
    assert result["insertion_chars_mean"] == 2.0 and result["expected_chars_mean"] == 8.0
    assert result["empty_rate"] == 0.5


def test_a_step_is_the_time_between_two_drafts_and_the_first_draft_is_not_one():
    assert step_times([0.5, 0.75, 1.5]) == [0.25, 0.75]
    assert step_times([0.5]) == []


def test_the_step_median_pools_the_steps_of_every_case():
    row = {
        "exact": True,
        "similarity": 1.0,
        "valid": True,
        "duplicated_closer": False,
        "forward_passes": 4,
        "tokens_per_forward": 0.5,
        "prefill_ms": 1.0,
        "first_draft_ms": 2.0,
        "total_ms": 10.0,
        "kind": "line",
        "text": "abcd",
        "expected": "abcdefgh",
    }
    assert aggregate([{**row, "step_ms": [1.0, 2.0]}, {**row, "step_ms": [9.0]}])["step_ms_median"] == 2.0
    assert aggregate([{**row, "step_ms": []}])["step_ms_median"] is None


def test_pass_counts_average_over_cases_and_count_zero_for_an_engine_without_them():
    row = {
        "exact": True,
        "similarity": 1.0,
        "valid": True,
        "duplicated_closer": False,
        "forward_passes": 4,
        "tokens_per_forward": 0.5,
        "prefill_ms": 1.0,
        "first_draft_ms": 2.0,
        "step_ms": [3.0],
        "total_ms": 10.0,
        "kind": "line",
        "text": "abcd",
        "expected": "abcdefgh",
        "pass_counts": None,
    }
    counted = {**row, "pass_counts": {"without_reveal": 3, "after_final": 1}}
    result = aggregate([row, counted])
    assert result["passes_without_reveal_mean"] == 1.5 and result["passes_after_final_mean"] == 0.5
