"""diffusion_infill.lsp.completion.without_run: the suggestion cache, then the document's draft, then a quiet
character; otherwise the engine runs (with a warm start when a completion is typed along). And the cache itself:
the same context again, or a shown suggestion typed along, answered without the model (`rest`)."""

from __future__ import annotations

from samples import RESETTING as CLASS  # the draft `self.items` gets is estimated at 0.88

from diffusion_infill.engine.requests import DOCUMENT, MODEL, TYPED_ALONG, InfillRequest
from diffusion_infill.lsp.completion.policy import OPEN, Gate, RequestTerms
from diffusion_infill.lsp.completion.triggers import Trigger
from diffusion_infill.lsp.completion.without_run import Answer, Suggestion, SuggestionCache, WithoutRun, rest

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


# The suggestion cache: the same context again, or a shown suggestion typed along; and the one rule for a
# completion being typed along (`rest`).


def test_the_same_context_gets_the_same_completion_whatever_its_confidence():
    cache = SuggestionCache()
    cache.store(InfillRequest("x = foo", "\n", "python"), Suggestion("(bar)", 0.1))
    assert cache.lookup(InfillRequest("x = foo", "\n", "python"), Gate(0.5)) == Suggestion("(bar)", 0.1)
    assert cache.lookup(InfillRequest("x = foo", "\n", "json"), Gate(0.5)) is None


def test_typing_along_a_shown_suggestion_leaves_the_rest_of_it():
    cache = SuggestionCache()
    cache.store(InfillRequest("x = foo", "\n"), Suggestion("(bar)", 0.8))
    assert cache.lookup(InfillRequest("x = foo(b", "\n"), Gate(0.5)) == Suggestion("ar)", 0.8, TYPED_ALONG)
    assert cache.lookup(InfillRequest("x = foo(c", "\n"), Gate(0.5)) is None  # typed something else
    assert cache.lookup(InfillRequest("x = foo(bar)", "\n"), Gate(0.5)) is None  # typed all of it: nothing left
    assert cache.lookup(InfillRequest("x = foo(b", ")\n"), Gate(0.5)) is None  # the text after the cursor changed


def test_a_suggestion_that_was_not_shown_is_not_typed_along():
    cache = SuggestionCache()
    cache.store(InfillRequest("x = foo", "\n"), Suggestion("(bar)", 0.2))
    assert cache.lookup(InfillRequest("x = foo(", "\n"), Gate(0.5)) is None
    assert cache.lookup(InfillRequest("x = foo(", "\n"), Gate(0.1)) == Suggestion("bar)", 0.2, TYPED_ALONG)


def test_only_the_latest_contexts_are_kept():
    cache = SuggestionCache(size=2)
    for index in range(3):
        cache.store(InfillRequest(f"v{index} = ", ""), Suggestion(str(index), None))
    assert cache.lookup(InfillRequest("v0 = ", ""), Gate(0.5)) is None
    assert cache.lookup(InfillRequest("v2 = ", ""), Gate(0.5)) == Suggestion("2", None)


def test_asking_for_a_context_again_keeps_it_no_longer_than_storing_it_did():
    """The kept completions are the ones written last: typing along looks through them newest first."""
    cache = SuggestionCache(size=2)
    cache.store(InfillRequest("v0 = ", ""), Suggestion("0", None))
    cache.store(InfillRequest("v1 = ", ""), Suggestion("1", None))
    assert cache.lookup(InfillRequest("v0 = ", ""), Gate(0.5)) == Suggestion("0", None)
    cache.store(InfillRequest("v2 = ", ""), Suggestion("2", None))
    assert cache.lookup(InfillRequest("v0 = ", ""), Gate(0.5)) is None
    assert cache.lookup(InfillRequest("v1 = ", ""), Gate(0.5)) == Suggestion("1", None)


def test_a_warm_start_types_along_a_suggestion_whether_it_was_shown_or_not():
    cache = SuggestionCache()
    cache.store(InfillRequest("x = foo", "\n"), Suggestion("(bar)", 0.2, DOCUMENT))
    assert cache.typed_along(InfillRequest("x = foo(", "\n")) == Suggestion("bar)", 0.2, TYPED_ALONG)
    assert cache.typed_along(InfillRequest("x = foo(", "\n"), Gate(0.5)) is None


def test_the_same_context_keeps_where_its_completion_came_from():
    cache = SuggestionCache()
    cache.store(InfillRequest("x = foo", "\n"), Suggestion("(bar)", 0.9, DOCUMENT))
    assert cache.lookup(InfillRequest("x = foo", "\n"), Gate(0.5)).source == DOCUMENT


OFFERED = InfillRequest("x = le", "\n", "python")


def test_the_rest_is_what_is_left_after_the_beginning_typed():
    assert rest(OFFERED, "n(items)", InfillRequest("x = len(", "\n", "python")) == "items)"
    assert rest(OFFERED, "n(items)", OFFERED) == "n(items)"  # nothing typed yet: all of it


def test_typing_something_else_or_all_of_it_is_not_typing_along():
    assert rest(OFFERED, "n(items)", InfillRequest("x = lo", "\n", "python")) is None
    assert rest(OFFERED, "n(items)", InfillRequest("x = len(items)", "\n", "python")) is None
    assert rest(OFFERED, "n(items)", InfillRequest("y = len(", "\n", "python")) is None


def test_the_text_after_the_cursor_and_the_language_must_be_the_same():
    assert rest(OFFERED, "n(items)", InfillRequest("x = len(", ")\n", "python")) is None
    assert rest(OFFERED, "n(items)", InfillRequest("x = len(", "\n", "json")) is None
