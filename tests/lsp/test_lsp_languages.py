"""diffusion_infill.lsp.languages: the grammar a document's closure is checked with, and a languageId
without one told once."""

from __future__ import annotations

from diffusion_infill.lsp.languages import Unchecked, closure_language


def test_the_grammar_comes_from_the_language_id_else_from_the_file_name():
    assert closure_language("python", "file:///a.txt") == "python"
    assert closure_language("plaintext", "file:///a.py") == "python"
    assert closure_language("plaintext", "file:///notes") is None


def test_a_language_id_without_a_grammar_is_told_once_and_one_with_a_grammar_never():
    unchecked = Unchecked()
    assert unchecked.first("python", "file:///a.py") is None
    told = unchecked.first("plaintext", "file:///notes")
    assert told is not None and "'plaintext'" in told and "balanced brackets only" in told
    assert unchecked.first("plaintext", "file:///other") is None
