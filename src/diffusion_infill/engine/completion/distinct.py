"""Several completions for one request (the user cycles through them): each one different.

Every sample is a cold start drawn with the random state where the previous one left it,
so samples differ in their draws; a small model is still often sure of one completion and
writes it again. A sample that is empty or repeats an earlier one (or one of `avoid`, the
items the caller already has) is drawn again, a bounded number of times: each draw is a
whole completion.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from diffusion_infill.engine.requests import Draft

REDRAWS_PER_ITEM = 2  # extra draws allowed for each item wanted beyond the first one offered


def distinct_samples(
    draw: Callable[[int], Draft | None], wanted: int, avoid: Collection[str] = ()
) -> list[Draft] | None:
    """Up to `wanted` final drafts from `draw(attempt)`, with distinct non-empty texts none of
    which is in `avoid`; the first draw's draft alone when none qualifies (a request gets its
    final draft even when empty). None as soon as a draw is cancelled (returns None)."""
    redraws = REDRAWS_PER_ITEM * max(wanted + len(avoid) - 1, 0)
    seen, finals, drawn = set(avoid), [], []
    while len(finals) < wanted and len(drawn) < wanted + redraws:
        final = draw(len(drawn))
        if final is None:
            return None
        drawn.append(final)
        if final.text and final.text not in seen:
            finals.append(final)
            seen.add(final.text)
    return finals or drawn[:1]
