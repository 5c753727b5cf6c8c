"""Parts of a selection to repair, as character offsets: plain data, without torch, so that the
deterministic fixes (diffusion_infill.engine.repair.fixes) load without the model stack."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    start: int  # character offsets into the selection
    end: int  # exclusive; equal to start for a pure insertion point


def merge(spans: list[Span], max_gaps: int) -> list[Span]:
    """Sorted spans with overlapping or touching ones merged, then the closest merged down to `max_gaps`."""
    merged: list[Span] = []
    for span in sorted(spans, key=lambda item: (item.start, item.end)):
        if merged and span.start <= merged[-1].end + 1:
            merged[-1] = Span(merged[-1].start, max(merged[-1].end, span.end))
        else:
            merged.append(span)
    while len(merged) > max_gaps:
        index = min(range(len(merged) - 1), key=lambda i: merged[i + 1].start - merged[i].end)
        merged[index : index + 2] = [Span(merged[index].start, merged[index + 1].end)]
    return merged
