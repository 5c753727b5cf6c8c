"""Specification of the infilling canvas layout (diffusion_infill.engine.completion.canvas)."""

import pytest

from diffusion_infill.engine.completion.canvas import (
    CanvasSpec,
    after_end,
    build,
    completion_canvas,
    insertion,
    settled,
    shown,
    suffix_head,
)
from diffusion_infill.engine.tokens import SpecialIds

IDS = SpecialIds(pad=0, eos=1, bos=2, mask=3, end=4)
M, E, P, EOS = IDS.mask, IDS.end, IDS.pad, IDS.eos


# Layout


def test_single_gap_canvas_is_gap_slots_then_suffix_head():
    canvas = completion_canvas([10, 11, 12], gap_slots=4, head=3, ids=IDS)

    assert canvas.tokens == [M, M, M, M, 10, 11, 12]
    assert canvas.known == [False] * 4 + [True] * 3
    assert canvas.gaps == [range(0, 4)]


def test_canvas_length_is_gap_slots_plus_suffix_head():
    assert len(completion_canvas([10, 11, 12, 13, 14], gap_slots=6, head=2, ids=IDS)) == 8


def test_multi_gap_canvas_alternates_known_segments_and_gaps_in_order():
    canvas = build([[10, 11], 2, [12], 3, [13]], M)

    assert canvas.tokens == [10, 11, M, M, 12, M, M, M, 13]
    assert canvas.known == [True, True, False, False, True, False, False, False, True]
    assert canvas.gaps == [range(2, 4), range(5, 8)]


def test_gap_slots_hold_the_mask_token_and_are_not_known():
    canvas = build([3, [10], 2], M)

    for gap in canvas.gaps:
        assert all(canvas.tokens[p] == M and not canvas.known[p] for p in gap)


def test_canvas_may_start_and_end_with_a_gap():
    canvas = build([2, [10], 1], M)

    assert canvas.gaps == [range(0, 2), range(3, 4)]


def test_empty_known_segment_adds_no_slots():
    assert build([[], 2, []], M).tokens == [M, M]


# Suffix head


def test_suffix_head_keeps_the_first_suffix_tokens():
    assert suffix_head([10, 11, 12, 13], 2, IDS) == [10, 11]


def test_suffix_head_pads_with_eos_where_the_file_ends():
    assert suffix_head([10], 4, IDS) == [10, EOS, EOS, EOS]


def test_suffix_head_is_all_eos_at_the_end_of_the_file():
    assert suffix_head([], 3, IDS) == [EOS, EOS, EOS]


def test_completion_canvas_clamps_eos_padding_at_the_end_of_the_file():
    canvas = completion_canvas([10], gap_slots=2, head=3, ids=IDS)

    assert canvas.tokens[2:] == [10, EOS, EOS]
    assert canvas.known[2:] == [True, True, True]


# Reading an insertion


def test_insertion_stops_at_end():
    assert insertion([10, 11, E, 12, 13], range(0, 5), IDS) == [10, 11]


def test_insertion_uses_only_the_first_end():
    assert insertion([10, E, 11, E], range(0, 4), IDS) == [10]


def test_insertion_drops_mask_and_pad_slots():
    assert insertion([10, M, 11, P, 12], range(0, 5), IDS) == [10, 11, 12]


def test_insertion_without_end_runs_to_the_end_of_the_gap():
    tokens = [10, 11, 12, 99]
    assert insertion(tokens, range(0, 3), IDS) == [10, 11, 12]


def test_insertion_reads_only_its_own_gap():
    tokens = [7, 10, 11, E, 8]
    assert insertion(tokens, range(1, 4), IDS) == [10, 11]


def test_insertion_is_empty_when_the_gap_starts_with_end():
    assert insertion([E, 10, 11], range(0, 3), IDS) == []


def test_settled_stops_at_the_first_masked_slot():
    assert settled([10, 11, M, 12, E], range(0, 5), IDS) == [10, 11]


def test_settled_stops_at_end_and_drops_pads():
    assert settled([10, P, 11, E, M], range(0, 5), IDS) == [10, 11]


def test_settled_is_empty_while_the_first_slot_is_masked():
    assert settled([M, 10, 11], range(0, 3), IDS) == []


# Slots past END


def test_after_end_lists_the_slots_after_the_first_end_of_each_gap():
    canvas = build([[10], 4, [11], 3], M)
    tokens = [10, 20, E, 21, 22, 11, E, 23, 24]

    assert after_end(tokens, canvas, IDS) == [3, 4, 7, 8]


def test_after_end_is_empty_for_a_gap_without_end():
    canvas = build([3, [10]], M)

    assert after_end([20, 21, 22, 10], canvas, IDS) == []


def test_after_end_is_empty_when_end_fills_the_last_slot():
    canvas = build([3, [10]], M)

    assert after_end([20, 21, E, 10], canvas, IDS) == []


def test_after_end_ignores_end_tokens_outside_gaps():
    canvas = build([[E], 2], M)

    assert after_end([E, 20, 21], canvas, IDS) == []


# The spec saved beside a checkpoint


def test_canvas_spec_round_trips_through_its_file(tmp_path):
    spec = CanvasSpec(noise="uniform", gap_slots=9, suffix_head=3, max_prefix=50)
    spec.save(tmp_path)

    assert CanvasSpec.load(tmp_path) == spec


def test_canvas_spec_round_trips_its_context_tokens(tmp_path):
    CanvasSpec(context_tokens=32).save(tmp_path)

    assert CanvasSpec.load(tmp_path).context_tokens == 32


def test_a_canvas_spec_saved_before_context_tokens_loads_with_none(tmp_path):
    (tmp_path / "infill.json").write_text('{"noise": "mask", "gap_slots": 24, "suffix_head": 8, "max_prefix": 128}')

    assert CanvasSpec.load(tmp_path).context_tokens == 0


def test_canvas_spec_is_none_for_a_checkpoint_without_one(tmp_path):
    assert CanvasSpec.load(tmp_path) is None


@pytest.mark.parametrize("gap_slots", [1, 5])
def test_every_gap_slot_is_inside_exactly_one_gap(gap_slots):
    canvas = build([[10], gap_slots, [11, 12], gap_slots], M)
    covered = [p for gap in canvas.gaps for p in gap]

    assert sorted(covered) == [p for p, known in enumerate(canvas.known) if not known]


def test_a_draft_shows_the_settled_slots_with_mask_noise_and_the_argmax_with_uniform_noise():
    current, argmax = [10, M, 12, E], [10, 11, 12, E]

    assert shown(current, argmax, range(0, 4), IDS, "mask") == [10]
    assert shown(current, argmax, range(0, 4), IDS, "uniform") == [10, 11, 12]
