"""Where a completion goes and the inline completion items that put it there (lsp.completion.items):
auto-paired closers covered, a selected menu entry extended and replaced, nothing empty or repeated."""

import pytest
from lsprotocol.types import Command, Position, Range, SelectedCompletionInfo

from diffusion_infill.engine.completion.auto_pairs import auto_paired_closers
from diffusion_infill.engine.requests import DOCUMENT, Draft
from diffusion_infill.lsp.completion.items import SelectedEntry, draft_params, items, placement, selected_entry
from diffusion_infill.lsp.text.positions import UTF16, Lines

COMMAND = Command(title="t", command="c")


def test_auto_paired_closers_are_covered_and_kept_at_the_end():
    text = 'print(f"😀{x|")\nnext'
    cursor = text.index("|")
    text = text.replace("|", "")
    assert auto_paired_closers(text, cursor) == '")'
    where = placement(text, cursor)
    assert (where.prefix, where.suffix, where.trail) == (text[:cursor], text[cursor:], '")')
    [item] = items(["!r}"], where, Lines(text), UTF16, COMMAND)
    assert item.insert_text == '!r}")'
    assert (item.range.start, item.range.end) == (Position(0, 12), Position(0, 14))  # emoji: 2 units


def test_selected_completion_entry_is_extended_and_replaced():
    text = "import os\nos.pa\n"
    cursor = text.index("pa") + 2
    where = placement(text, cursor, SelectedEntry(cursor - 2, cursor, "path"))
    assert where.prefix == "import os\nos.path" and where.suffix == "\n"
    [item] = items([".join("], where, Lines(text), UTF16, COMMAND)
    assert item.insert_text == "path.join("
    assert (item.range.start, item.range.end) == (Position(1, 3), Position(1, 5))


def test_items_drop_empty_and_repeated_completions():
    where = placement("x = ", 4)
    result = items(["", "1", "2", "1"], where, Lines("x = "), UTF16, COMMAND)
    assert [item.insert_text for item in result] == ["1", "2"]
    assert all(item.range.start == item.range.end == Position(0, 4) for item in result)


def test_a_selected_entry_is_read_as_offsets_and_must_start_at_or_before_the_cursor():
    lines = Lines("import os\nos.pa\n")
    cursor = lines.offset(Position(1, 3), UTF16)

    def entry(start: int, end: int) -> SelectedCompletionInfo:
        return SelectedCompletionInfo(range=Range(Position(1, start), Position(1, end)), text="path")

    assert selected_entry(lines, UTF16, cursor, None) is None
    assert selected_entry(lines, UTF16, cursor, entry(2, 5)) == SelectedEntry(cursor - 1, cursor + 2, "path")
    for after_the_cursor_or_reversed in (entry(4, 5), entry(3, 2)):
        with pytest.raises(ValueError, match="must start at or before the cursor"):
            selected_entry(lines, UTF16, cursor, after_the_cursor_or_reversed)


def test_a_final_draft_notification_gives_each_answered_items_info_line():
    final = Draft(" = []", 0, 0.0, final=True, valid=True, confidence=0.9, source=DOCUMENT, ms=3.4)
    params = draft_params("file:///a.py", 7, Position(2, 4), final, 12.6, [final, Draft("", 1, 0.0, final=True)])
    assert params == {
        "uri": "file:///a.py",
        "version": 7,
        "position": {"line": 2, "character": 4},
        "text": " = []",
        "step": 0,
        "final": True,
        "source": DOCUMENT,
        "ms": 13,
        "confidence": 0.9,
        "items": [{"step": 0, "ms": 3, "confidence": 0.9, "source": DOCUMENT}],  # empty items are no items
    }
    assert "items" not in draft_params("file:///a.py", 7, Position(2, 4), Draft(" =", 1, 0.0, final=False), 1.0, [])
