"""diffusion_infill.lsp.completion.triggers: where an as-you-type request is not worth a completion run."""

from __future__ import annotations

from diffusion_infill.lsp.completion.triggers import quiet

QUIET = ' :),".'  # the embedded model's (src/diffusion_infill/engine/model/confidence.json)


def test_requests_after_a_word_or_at_a_line_start_are_run():
    assert not quiet("x = total", QUIET) and not quiet("x = 1\n", QUIET) and not quiet("", QUIET)


def test_requests_after_a_quiet_character_are_not():
    assert all(quiet("x = f(a" + char, QUIET) for char in QUIET)
    assert quiet("def f(a):", QUIET) and quiet("    ", QUIET)


def test_the_set_can_be_changed_or_emptied():
    assert not quiet("def f(a):", "") and quiet("x = [", "[")
