"""The text a completion gives the engine: bounded, sliced without copying the document, and LF."""

from __future__ import annotations

import pytest

from diffusion_infill.lsp.completion.items import placement
from diffusion_infill.lsp.text.rope import Rope
from diffusion_infill.lsp.text.window import MAX_AFTER, MAX_BEFORE, MAX_LINE, ModelText, Tails, bounded

LINE = "    value = compute(value, 12)  # a line of code\n"
TEXT = LINE * (3 * MAX_BEFORE // len(LINE)) + "x" * (MAX_BEFORE + 5) + "\n" + LINE * 10


@pytest.mark.parametrize(
    "cursor",
    [
        0,
        17,
        MAX_BEFORE - 1,
        MAX_BEFORE,
        MAX_BEFORE + 1,
        2 * MAX_BEFORE + 3,
        len(TEXT) - MAX_AFTER - 1,
        len(TEXT) - 60,
        len(TEXT) - 3,
        len(TEXT),
    ],
)
@pytest.mark.parametrize("kept_as", [str, Rope])
def test_the_window_is_the_one_bounded_cuts_from_the_whole_text(cursor, kept_as):
    where = placement(kept_as(TEXT), cursor)
    assert (where.prefix, where.suffix) == bounded(TEXT[:cursor], TEXT[cursor:])


@pytest.mark.parametrize(
    ("prefix", "suffix", "line_end"),
    [
        ("def f():\r\n    return ", "\r\nprint(f())\r\n", "\r\n"),
        ("def f():\r    return ", "\rprint(f())\r", "\r"),
        ("def f():\n    return ", "\nprint(f())\n", "\n"),
        ("x = ", "", "\n"),
        ("x = 1", "\r\n", "\r\n"),
    ],
)
def test_the_model_reads_lf_and_a_completion_is_written_with_the_documents_line_end(prefix, suffix, line_end):
    window = ModelText.of(prefix, suffix)
    assert "\r" not in window.prefix + window.suffix
    assert window.prefix.count("\n") == prefix.count("\r\n") + prefix.replace("\r\n", "").count("\r") + prefix.replace(
        "\r\n", ""
    ).count("\n")
    assert window.line_end == line_end
    assert window.to_document("1\n    pass\n") == f"1{line_end}    pass{line_end}"


@pytest.mark.parametrize("cursor", [10, MAX_LINE, 3 * MAX_LINE, 50_000, 99_990])
def test_a_long_line_gives_the_window_at_most_max_line_characters_of_it_on_either_side(cursor):
    line = "x" * 100_000
    where = placement(Rope("import json\n" + line + "\nprint()\n"), len("import json\n") + cursor)
    assert len(where.prefix.rsplit("\n", 1)[-1]) <= MAX_LINE and len(where.suffix.split("\n", 1)[0]) <= MAX_LINE
    assert where.prefix.endswith("x" * min(cursor, MAX_LINE)), "the window keeps the line up to the cursor"


def test_after_a_long_line_the_window_keeps_at_most_max_line_characters_of_it():
    prefix, _ = bounded("y" * 100_000 + "\n", "")
    assert prefix == "y" * (MAX_LINE - 1) + "\n"


def test_another_documents_tail_is_sliced_once_a_version():
    tails, text = Tails(), Rope("def load(path):\r\n    return open(path)\r\n")
    first = tails.of("file:///b.py", text)
    assert first == "def load(path):\n    return open(path)\n"
    assert tails.of("file:///b.py", text) is first  # the same version: not sliced again
    edited = text.replaced(len(text), len(text), "load('x')\r\n")
    assert tails.of("file:///b.py", edited) == first + "load('x')\n"  # an edit: the new text's tail
    tails.forget("file:///b.py")
    assert tails.of("file:///b.py", Rope("x = 1\n")) == "x = 1\n"
