"""Specification of the model judging copied lines (diffusion_infill.engine.completion.judge)."""

import dataclasses

import pytest
import torch

from diffusion_infill.engine.completion import copied_lines, judge
from diffusion_infill.engine.completion.confidence import Calibration
from diffusion_infill.engine.completion.copied_lines import CopiedLine
from diffusion_infill.engine.completion.infill import InfillEngine
from diffusion_infill.engine.completion.sampler import DenoiseSettings
from diffusion_infill.engine.requests import MODEL, REVISED, InfillRequest
from diffusion_infill.engine.settings import EngineSettings

PREFIX = "total = sum(a)\nprint(total)\ntotal = su"
REQUEST = InfillRequest(PREFIX, "", "python")


def candidate(text, rule="same"):
    return CopiedLine(text, rule, matched=3, agree=1, distance=2)


@pytest.fixture
def engine(tiny_loaded):
    return InfillEngine(tiny_loaded, EngineSettings(mode="single-line", denoise=DenoiseSettings(max_steps=4)))


def test_every_candidate_is_judged_in_one_decoder_pass(engine):
    scorer = judge.Judge(engine, REQUEST)
    rows = [scorer.tokens(text) for text in ("m(a)", "m(x)", "m")]

    scores, _ = scorer.score(rows)

    assert scorer.passes == 1
    assert [len(score) for score in scores] == [len(row) + 1 for row in rows]  # its tokens, then END
    assert all(-10.0 <= value <= 0.0 for score in scores for value in score)


def test_a_candidates_score_is_what_the_model_gives_its_tokens_on_its_own_canvas(engine, tiny_loaded):
    scorer = judge.Judge(engine, REQUEST)
    row = scorer.tokens("m(a)")
    alone, _ = scorer.score([row])
    beside, _ = scorer.score([scorer.tokens("m(x)"), row])

    assert beside[1] == pytest.approx(alone[0], abs=1e-4)  # the batch does not mix canvases


def test_a_text_too_long_for_the_gap_is_left_out(engine):
    judged = judge.judge(engine, REQUEST, [candidate("m(" + ", ".join(["width"] * 40) + ")"), candidate("m(x)")])

    assert [j.text for j in judged] == ["m(x)"]


def test_judged_texts_come_best_first(engine):
    judged = judge.judge(engine, REQUEST, [candidate("m(a)"), candidate("m(x)"), candidate("m")])

    assert sorted(j.text for j in judged) == ["m", "m(a)", "m(x)"]
    assert [j.mean_logprob for j in judged] == sorted((j.mean_logprob for j in judged), reverse=True)


def test_the_first_slot_of_a_healed_cursor_only_holds_tokens_that_start_with_the_healed_text(engine, tiny_loaded):
    scorer = judge.Judge(engine, REQUEST)
    assert scorer.context.healed  # the cursor is inside `su...`
    _, logprobs = scorer.score([scorer.tokens("m(x)")])

    allowed = torch.isfinite(logprobs[0, 0])
    texts = [tiny_loaded.tokenizer.decode([i]) for i in torch.nonzero(allowed)[:, 0].tolist()]
    assert texts and all(text.startswith(scorer.context.healed) for text in texts)


def test_the_engine_answers_with_a_judged_line_that_clears_the_threshold_without_denoising(engine):
    engine.revision = Calibration(dict.fromkeys(judge.FEATURES, 0.0), intercept=5.0, threshold=0.5)

    drafts = list(engine.complete(REQUEST))

    assert len(drafts) == 1 and drafts[0].final and drafts[0].source == REVISED
    assert drafts[0].text == "m(a)" and drafts[0].step == 1 and drafts[0].confidence > 0.99


def test_the_engine_denoises_when_no_judged_line_clears_the_threshold(engine):
    engine.revision = Calibration(dict.fromkeys(judge.FEATURES, 0.0), intercept=-5.0, threshold=0.5)

    drafts = list(engine.complete(REQUEST))

    assert drafts[-1].final and drafts[-1].source == MODEL and len(drafts) > 1


def test_without_a_revision_calibration_the_engine_denoises(engine):
    assert engine.revision is None
    assert list(engine.complete(REQUEST))[-1].source == MODEL


def test_multi_line_requests_are_denoised(engine):
    engine.revision = Calibration(dict.fromkeys(judge.FEATURES, 0.0), intercept=5.0, threshold=0.5)
    engine.settings = dataclasses.replace(engine.settings, mode="multi-line")

    assert list(engine.complete(REQUEST))[-1].source == MODEL


def test_the_gate_reads_a_judged_texts_features_by_name(engine):
    judged = judge.judge(engine, REQUEST, [candidate("m(a)", rule="analogous")])[0]

    values = judge.features(judged, PREFIX)

    assert set(values) == judge.FEATURES
    assert values["analogous"] == 1.0 and values["after_word"] == 1.0


def test_a_request_that_wants_no_copied_line_is_denoised(engine):
    engine.revision = Calibration(dict.fromkeys(judge.FEATURES, 0.0), intercept=5.0, threshold=0.5)

    assert list(engine.complete(dataclasses.replace(REQUEST, document_drafts=False)))[-1].source == MODEL


def test_lines_of_the_other_open_documents_can_answer(engine):
    engine.revision = Calibration(dict.fromkeys(judge.FEATURES, 0.0), intercept=5.0, threshold=0.5)
    request = InfillRequest("value = ", "", "python", others=("value = sum(a)\n",))

    assert list(engine.complete(request))[-1].source == REVISED


def test_a_judged_line_that_breaks_closure_is_replaced_by_a_run(engine):
    # the earlier line closes one bracket too many: its rest, the best judged line here (the calibration
    # weighs the document draft, which keeps closure, down), would break the file's closure
    prefix = "total = sum(a))\ntotal = su"
    engine.revision = Calibration({**dict.fromkeys(judge.FEATURES, 0.0), "document": -20.0}, 5.0, threshold=0.5)
    request = InfillRequest(prefix, "", "python")
    assert judge.best(engine, request, copied_lines.candidates(request))[1].text == "m(a))"

    final = list(engine.complete(request))[-1]

    assert final.source == MODEL and final.text != "m(a))"
