"""diffusion_infill.bench.decoder_shapes: one pass of each decoder shape against the baseline's decoding step."""

from diffusion_infill.bench.decoder_shapes import BASELINE, SHAPES, measure


def test_every_shape_is_timed_against_the_baseline_step():
    results = measure(rounds=2, shapes={"2x256": SHAPES["2x256"]})
    assert set(results) == {"2x256", BASELINE}
    assert results[BASELINE]["over_baseline"] == 1.0
    assert results["2x256"]["pass_ms_median"] > 0
    assert results["2x256"]["parameters"] < results[BASELINE]["parameters"]  # half the depth, fewer weights
