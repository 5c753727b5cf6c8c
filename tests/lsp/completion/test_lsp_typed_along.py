"""diffusion_infill.lsp.completion.typed_along: the one rule for a completion being typed along."""

from __future__ import annotations

from diffusion_infill.engine.requests import InfillRequest
from diffusion_infill.lsp.completion.typed_along import rest

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
