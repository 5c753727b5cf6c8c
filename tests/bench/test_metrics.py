"""diffusion_infill.bench.metrics: what counts as a duplicated closer, and the aggregate of a run."""

from __future__ import annotations

from diffusion_infill.bench.metrics import aggregate, duplicated_closer, percentile, step_times


def test_an_insertion_that_repeats_the_closer_after_the_cursor_is_duplicated():
    assert duplicated_closer("print(", "x, y)", ")\n", "x, y")


def test_an_insertion_that_stops_before_the_closer_is_not():
    assert not duplicated_closer("print(", "x, y", ")\n", "x, y")


def test_a_closer_the_original_also_had_is_not_counted():
    assert not duplicated_closer("print(", "f(x)", ")\n", "f(x)")


def test_a_closer_of_the_insertion_s_own_bracket_is_not_counted():
    assert not duplicated_closer("print(", "len(x)", ")\n", "a, b")


def test_closing_the_string_the_quote_after_the_cursor_closes_is_duplicated():
    # bench --case-seed 9241: pygls/__init__.py:24, and replicate.py:102 and test_namespace_pkgs.py:164,
    # which the old count (the suggestion ends with the suffix's first character) missed
    assert duplicated_closer('IS_WASI = sys.platform == "', 'nt" "', '"\n', "wasi")
    assert duplicated_closer('output = d.get("', 'response", None")', '")\n', "output")
    assert duplicated_closer("paths = ['portion1', '", "just', ' 'j',", "']\n", "both_portions")


# bench --case-seed 9241: a `]` inside a string (test_glob.py:239) and a `)` in a comment
# (encodings/mac_arabic.py:105) close nothing; the old count (the suggestion ends with the suffix's
# first character) counted both.
def test_a_closer_s_character_inside_a_string_or_comment_is_text():
    assert not duplicated_closer("check('[[][", "]]]]]]", "]]')\n", "*]/_")
    assert not duplicated_closer("x = 1  # right-left (", "ne-left) (--left)", ")\n", "need override")


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
