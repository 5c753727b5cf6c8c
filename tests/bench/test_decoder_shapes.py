"""diffusion_infill.bench.decoder_shapes: one pass of each decoder shape against the baseline's decoding step."""

import pytest

from diffusion_infill.bench.decoder_shapes import BASELINE, SHAPES, measure


def test_every_shape_is_timed_against_the_baseline_step():
    results = measure(rounds=2, shapes={name: SHAPES[name] for name in ("2x256", "4x256")})
    assert set(results) == {"2x256", "4x256", BASELINE}
    baseline_ms = results[BASELINE]["pass_ms_median"]
    assert baseline_ms > 0
    for name in ("2x256", "4x256"):
        row = results[name]
        assert row["pass_ms_median"] > 0
        # medians are rounded to 0.01 ms before they are shown: the ratio is the unrounded one
        assert row["over_baseline"] == pytest.approx(row["pass_ms_median"] / baseline_ms, rel=0.05, abs=0.01)
    assert results["2x256"]["parameters"] < results["4x256"]["parameters"]  # half the depth, fewer weights
