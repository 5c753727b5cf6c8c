"""The kept code-action results (lsp.fixes.results): bounded, the least recently used goes first."""

from __future__ import annotations

from diffusion_infill.engine.repair.fixes import FixResult
from diffusion_infill.lsp.fixes.results import FixResults


def test_kept_results_are_bounded_and_the_least_recent_goes_first():
    results = FixResults(size=2)
    first, second, third = (
        ("file:///a", 1, "json", 0, 3),
        ("file:///a", 1, "json", 0, 4),
        ("file:///a", 2, "json", 0, 3),
    )
    results.put(first, FixResult("a", True))
    results.put(second, FixResult("b", True))
    assert results.get(first).text == "a"  # now the most recent
    results.put(third, FixResult("c", True))
    assert results.get(second) is None and results.get(first).text == "a" and results.get(third).text == "c"
    results.clear()
    assert results.get(first) is None
