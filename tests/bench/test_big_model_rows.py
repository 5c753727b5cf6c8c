"""diffusion_infill.bench.big's rows with the embedded model, on small documents: each prints its timings."""

from __future__ import annotations

import asyncio

import pytest

from diffusion_infill.bench.big import complete_cli, long_line_completion


@pytest.mark.slow
def test_a_long_lines_completions_are_timed_against_small_files():
    result = asyncio.run(long_line_completion(20_000, 3))
    for name in ("small", "small_json", "json_one_line"):
        assert result[name]["keystrokes"] == 3 and result[name]["ms_p95"] > 0
    assert result["json_one_line"]["characters"] >= 20_000 and result["p95_over_small"] > 0


@pytest.mark.slow
def test_complete_is_timed_in_big_files_against_a_small_one():
    result = complete_cli(0.005)
    assert result["python_5mb"]["characters"] > result["small"]["characters"]
    for name in ("small", "python_5mb", "json_3mb_one_line"):
        assert result[name]["seconds"] > 0 and result[name]["peak_rss_mb"] > 0
    assert result["json_3mb_one_line"]["over_small"] > 0
