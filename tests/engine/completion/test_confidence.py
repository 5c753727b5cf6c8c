"""engine.completion.confidence: the evidence a final completion carries, the logistic estimate fitted on
it, and the gate the server applies."""

from __future__ import annotations

import logging
import random

import pytest
import torch

from diffusion_infill.engine.completion.confidence import Calibration, SlotLogprobs, evidence, fit
from diffusion_infill.engine.completion.infill import InfillEngine
from diffusion_infill.engine.requests import InfillRequest
from diffusion_infill.engine.settings import EngineSettings


def test_evidence_names_the_kind_of_position():
    at_start = evidence([-0.1, -2.0], "return x", "def f(x):\n    ", cut=False)
    assert at_start.at_line_start and not at_start.after_word and not at_start.multi_line
    assert (at_start.min_logprob, at_start.mean_logprob, at_start.chars) == (-2.0, -1.05, 8)
    after_word = evidence([], "(1)\n", "    value", cut=True)
    assert after_word.after_word and after_word.multi_line and after_word.cut and after_word.min_logprob == 0.0


def test_a_fit_ranks_likely_completions_above_unlikely_ones():
    rng = random.Random(0)
    rows = []
    for _ in range(400):
        logprob = rng.uniform(-4, 0)
        found = evidence([logprob, logprob / 2], "x" * rng.randint(1, 20), "a = ", cut=False)
        rows.append((found, rng.random() < 1 / (1 + 2.718 ** (-(3 * logprob + 4)))))
    calibration = fit(rows)
    sure, unsure = evidence([-0.05, -0.02], "xx", "a = ", False), evidence([-3.5, -1.7], "xx", "a = ", False)
    assert calibration.estimate(sure) > 0.8 > 0.2 > calibration.estimate(unsure)
    assert calibration.weights["mean_logprob"] > 0


def test_a_calibration_is_saved_beside_the_checkpoint_and_loaded_back(tmp_path):
    calibration = Calibration({"mean_logprob": 1.5, "log_chars": -0.25}, -0.5, 0.3, "a test", quiet_after=":)")
    calibration.save(tmp_path)
    assert Calibration.load(tmp_path) == calibration


def test_a_calibration_without_quiet_characters_has_none(tmp_path):
    (tmp_path / "confidence.json").write_text('{"weights": {}, "intercept": 0.0, "threshold": 0.3}')
    assert Calibration.load(tmp_path).quiet_after == ""


def test_no_calibration_is_silent(tmp_path, caplog):
    assert Calibration.load(tmp_path / "missing") is None and Calibration.load(None) is None
    assert caplog.records == []


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "JSONDecodeError"),
        ('{"intercept": 0}', "KeyError: 'weights'"),
        ("[1, 2]", "TypeError"),
        (
            '{"weights": {"colour": 1}, "intercept": 0}',
            "unknown features colour",
        ),  # no estimate rather than a wrong one
    ],
)
def test_a_corrupt_calibration_is_dropped_with_a_warning_naming_the_file_and_what_goes(
    tmp_path, caplog, content, reason
):
    (tmp_path / "confidence.json").write_text(content)
    assert Calibration.load(tmp_path) is None
    [record] = caplog.records
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert str(tmp_path / "confidence.json") in message and reason in message
    assert "minConfidence threshold" in message and "quietAfter" in message


def test_slot_logprobs_keep_the_probability_a_slot_was_chosen_with():
    log = SlotLogprobs(range(1, 4))
    first = torch.zeros(5, 3)
    first[1:4] = torch.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    log.observe(first, torch.tensor([0, 0, 1, 2, 0]), torch.tensor([False, True, True, True, False]))
    later = first.clone()
    later[1] = torch.tensor([1e4, -1e4, -1e4])  # pinned: revealed earlier, keeps its first score
    later[2] = torch.tensor([0.0, 5.0, 0.0])
    log.observe(later, torch.tensor([0, 0, 1, 2, 0]), torch.tensor([False, False, True, True, False]))
    scores = log.first(3)
    assert abs(scores[0] - torch.log_softmax(torch.tensor([2.0, 0, 0]), 0)[0].item()) < 1e-6
    assert abs(scores[1] - torch.log_softmax(torch.tensor([0, 5.0, 0]), 0)[1].item()) < 1e-6
    assert abs(scores[2] - (-torch.log(torch.tensor(3.0)).item())) < 1e-6


def test_a_grown_gap_keeps_the_scores_of_its_first_slots_and_scores_the_new_ones():
    log = SlotLogprobs(range(0, 2))
    log.observe(torch.tensor([[3.0, 0.0], [0.0, 3.0], [0.0, 0.0]]), torch.tensor([0, 1, 0]), torch.ones(3, dtype=bool))
    before = log.first(2)
    log.grow(range(0, 3))
    pinned = torch.tensor([[1e4, -1e4], [-1e4, 1e4], [0.0, 1.0]])  # the first two slots carried over, revealed
    log.observe(pinned, torch.tensor([0, 1, 1]), torch.tensor([False, False, True]))
    scores = log.first(3)
    assert scores[:2] == before
    assert abs(scores[2] - torch.log_softmax(torch.tensor([0.0, 1.0]), 0)[1].item()) < 1e-6


def test_the_engine_gives_its_final_draft_evidence_and_a_calibrated_estimate(tiny_loaded, tmp_path):
    engine = InfillEngine(tiny_loaded, EngineSettings(mode="single-line"))
    request = InfillRequest("def area(w, h):\n    return w", "\n", "python")
    final = list(engine.complete(request))[-1]
    assert final.confidence is None and final.evidence is not None  # no confidence.json: no estimate
    assert final.evidence.after_word and final.evidence.chars == len(final.text)
    assert final.evidence.min_logprob <= final.evidence.mean_logprob <= 0.0
    engine.calibration = Calibration({"mean_logprob": 1.0}, 0.0)
    final = list(engine.complete(request))[-1]
    assert 0.0 < final.confidence <= 0.5  # sigmoid of a mean log-probability, which is at most 0
