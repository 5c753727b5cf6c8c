"""A document's text in pieces: slices and edits as a `str` would give them, at the cost of the edit."""

from __future__ import annotations

import random
import tracemalloc

import pytest

from diffusion_infill.lsp.text import rope
from diffusion_infill.lsp.text.rope import PIECE, Rope


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(rope, "PIECE", 3)  # every edit crosses, splits or empties pieces


def test_slices_are_those_of_the_text(small_pieces):
    text = "a😀中b\r\nsecond line\nlast"
    kept = Rope(text)
    assert len(kept.pieces) > 5 and str(kept) == text and len(kept) == len(text)
    for start in range(-3, len(text) + 3):
        for end in range(-3, len(text) + 3):
            assert kept[start:end] == text[start:end], (start, end)
    assert kept[:] == text and kept[-4:] == "last"


def test_edits_give_the_text_a_str_would_and_leave_the_old_version_alone(small_pieces):
    generator, text = random.Random(7), "def f(x):\n    return x  # 中\n" * 3
    kept = Rope(text)
    for _ in range(500):
        start = generator.randrange(len(text) + 1)
        end = min(len(text), start + generator.choice([0, 0, 1, 2, 5, 20]))
        inserted = generator.choice(["", "y", "\r\n", "😀", "abcdefgh"])
        edited = kept.replaced(start, end, inserted)
        assert str(kept) == text  # the version before the edit still reads as it did
        text, kept = text[:start] + inserted + text[end:], edited
        assert str(kept) == text and len(kept) == len(text) and kept.isascii() == text.isascii()
        assert all(piece for piece in kept.pieces)  # an emptied piece is dropped
    assert str(Rope("").replaced(0, 0, "new")) == "new"


def test_an_edit_outside_the_text_is_refused():
    with pytest.raises(IndexError):
        Rope("abc").replaced(2, 4, "x")


def test_a_keystroke_in_a_ten_megabyte_text_copies_a_piece_not_the_text():
    kept = Rope("0123456789" * 1_000_000)
    tracemalloc.start()
    try:
        edited = kept.replaced(5_000_000, 5_000_000, "x")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert edited[4_999_998:5_000_003] == "89x01"
    assert peak < 4 * PIECE + 64 * len(kept.pieces)  # a str copy would be 10 MB
