"""Where a completion goes and the inline completion items that put it there (lsp.completion.items):
auto-paired closers covered, a selected menu entry extended and replaced, nothing empty or repeated."""

from lsprotocol.types import Command, Position

from diffusion_infill.engine.completion.auto_pairs import auto_paired_closers
from diffusion_infill.lsp.completion.items import SelectedEntry, items, placement
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
