"""diffusion_infill.engine.completion.distinct: several samples for one request, each different."""

from __future__ import annotations

from diffusion_infill.engine.completion.distinct import REDRAWS_PER_ITEM, distinct_samples
from diffusion_infill.engine.requests import Draft


def drawing(*texts: str):
    """draw(attempt) giving `texts` in turn, and the attempts made."""
    attempts: list[int] = []

    def draw(attempt: int) -> Draft:
        attempts.append(attempt)
        return Draft(texts[attempt], 3, 0.0, final=True)

    return draw, attempts


def test_a_repeated_or_empty_sample_is_drawn_again():
    draw, attempts = drawing("a", "a", "", "b", "c")
    assert [d.text for d in distinct_samples(draw, 3)] == ["a", "b", "c"]
    assert attempts == [0, 1, 2, 3, 4]


def test_samples_differ_from_what_the_caller_already_offers():
    draw, _ = drawing("kept", "other")
    assert [d.text for d in distinct_samples(draw, 1, avoid=("kept",))] == ["other"]


def test_redraws_are_bounded_and_one_draft_always_comes_back():
    draw, attempts = drawing(*["same"] * 20)
    assert [d.text for d in distinct_samples(draw, 3)] == ["same"]
    assert len(attempts) == 3 + REDRAWS_PER_ITEM * 2
    draw, attempts = drawing("", "x")
    assert [d.text for d in distinct_samples(draw, 1)] == [""]  # a single item: no redraw, an empty answer
    assert attempts == [0]


def test_a_cancelled_draw_cancels_all():
    assert distinct_samples(lambda attempt: None, 3) is None
