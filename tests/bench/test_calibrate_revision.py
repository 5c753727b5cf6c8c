"""diffusion_infill.bench.calibrate_revision: the gate of judged copied lines, and what each rule offers."""

from diffusion_infill.bench import calibrate_revision
from diffusion_infill.bench.replay import Excerpt
from diffusion_infill.engine.completion.confidence import Calibration

LINES = "".join(f"total_{i} = compute(width, height)\n" for i in range(6))
PIECE = Excerpt("example.py:7-8", LINES, "total_6 = compute(width, height)\n")


def test_rule_counts_add_up_and_the_repeated_line_is_found():
    counts = calibrate_revision.rule_counts([PIECE])

    assert counts["places"] > 0
    for rule, row in counts.items():
        if rule != "places":
            assert row["first_right"] <= row["first"] <= counts["places"]
            assert row["some_right"] <= row["offered"] <= counts["places"]
    assert counts["all"]["some_right"] > 0 and counts["same"]["offered"] > 0


def place(*rows):
    return [{"text": text, "features": {"score": score}, "accepted": accepted} for text, score, accepted in rows]


def test_the_gate_shows_the_best_estimated_text_per_place_and_the_threshold_keeps_the_precision():
    calibration = Calibration({"score": 1.0}, intercept=0.0)
    found = [place(("a", 3.0, True), ("b", -1.0, False)), place(("c", 1.0, False)), place(("d", -3.0, True))]

    high = calibrate_revision.shown_at(calibration, found, 0.9)
    assert (high["shown"], high["accepted"], high["chars_accepted"]) == (1, 1, 1)
    assert calibrate_revision.shown_at(calibration, found, 0.5)["precision"] == 0.5
    assert calibrate_revision.pick_threshold(calibration, found, 0.75) > 0.73  # sigmoid(1): "c" kept out
