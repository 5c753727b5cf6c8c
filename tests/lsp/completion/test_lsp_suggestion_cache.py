"""diffusion_infill.lsp.completion.suggestion_cache: the same context again, or a shown suggestion typed along,
answered without the model; and the one rule for a completion being typed along (`rest`)."""

from __future__ import annotations

from diffusion_infill.engine.requests import DOCUMENT, TYPED_ALONG, InfillRequest
from diffusion_infill.lsp.completion.policy import Gate
from diffusion_infill.lsp.completion.suggestion_cache import Suggestion, SuggestionCache, rest


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
