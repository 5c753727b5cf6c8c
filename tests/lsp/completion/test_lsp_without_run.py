"""diffusion_infill.lsp.completion.without_run: the suggestion cache, then the document's draft, then a quiet
character; otherwise the engine runs (with a warm start when a completion is typed along)."""

from __future__ import annotations

from samples import RESETTING as CLASS  # the draft `self.items` gets is estimated at 0.88

from diffusion_infill.engine.requests import DOCUMENT, MODEL, TYPED_ALONG, InfillRequest
from diffusion_infill.lsp.completion.policy import OPEN, Gate, RequestTerms
from diffusion_infill.lsp.completion.suggestion_cache import Suggestion
from diffusion_infill.lsp.completion.triggers import Trigger
from diffusion_infill.lsp.completion.without_run import Answer, WithoutRun

TYPING = RequestTerms(gate=Gate(0.5), trigger=Trigger.AUTOMATIC, document_drafts=True, calibrated=True, quiet_after=":")


def test_the_same_context_comes_first_then_the_document_draft():
    policy = WithoutRun()
    request = InfillRequest(CLASS, "\n", "python")
    answer = policy.answer(request, TYPING)
    assert (answer.kept.text, answer.kept.source, answer.run) == (" = []", DOCUMENT, False)
    policy.remember(request, Suggestion(" = None", 0.2))
    assert policy.answer(request, TYPING) == Answer(Suggestion(" = None", 0.2, MODEL), run=False)


def test_a_document_draft_needs_an_automatic_single_item_request_a_calibrated_model_and_the_setting():
    request = InfillRequest(CLASS, "\n", "python")
    assert WithoutRun().answer(request, TYPING).kept.source == DOCUMENT
    for asked in (
        RequestTerms(2, Gate(0.5), Trigger.AUTOMATIC, True, True),
        RequestTerms(1, Gate(0.5), Trigger.INVOKED, True, True),
        RequestTerms(1, Gate(0.5), Trigger.AUTOMATIC, False, True),
        RequestTerms(1, Gate(0.5), Trigger.AUTOMATIC, True, False),
    ):
        assert WithoutRun().answer(request, asked) == Answer(None, run=True)
    under = RequestTerms(1, Gate(0.9), Trigger.AUTOMATIC, True, True)  # the draft's estimate is under 0.9
    assert WithoutRun().answer(request, under) == Answer(None, run=True)


def test_a_shown_suggestion_typed_along_gets_its_rest_without_a_run():
    policy = WithoutRun()
    policy.remember(InfillRequest("x = le", "\n", "python"), Suggestion("n(items)", 0.8))
    answer = policy.answer(InfillRequest("x = len(", "\n", "python"), TYPING)
    assert answer == Answer(Suggestion("items)", 0.8, TYPED_ALONG), run=False)


def test_one_not_shown_is_typed_along_by_a_warm_start_of_the_run():
    policy = WithoutRun()
    policy.remember(InfillRequest("x = le", "\n", "python"), Suggestion("n(items)", 0.2))
    assert policy.answer(InfillRequest("x = len(", "\n", "python"), TYPING) == Answer(None, True, "items)")


def test_a_quiet_character_answers_nothing_unless_the_cache_knows_better():
    policy = WithoutRun()
    assert policy.answer(InfillRequest("def f(x):", "\n", "python"), TYPING) == Answer(None, run=False)
    invoked = RequestTerms(3, OPEN, quiet_after=":")
    assert policy.answer(InfillRequest("def f(x):", "\n", "python"), invoked) == Answer(None, run=True)
    policy.remember(InfillRequest("def f(x)", "\n", "python"), Suggestion(": pass", 0.9))
    assert policy.answer(InfillRequest("def f(x):", "\n", "python"), TYPING).kept.text == " pass"


def test_several_items_get_the_kept_one_first_and_the_run_samples_the_others():
    policy = WithoutRun()
    request = InfillRequest("x = ", "\n", "python")
    policy.remember(request, Suggestion("1", 0.1))
    assert policy.answer(request, RequestTerms(3)) == Answer(Suggestion("1", 0.1), run=True)
