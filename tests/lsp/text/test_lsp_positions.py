"""Positions in utf-8/16/32 and incremental document sync, on lines with emoji and CJK; the command
line's exact character positions on the same lines."""

import random
import subprocess
import sys
import tracemalloc
from unittest import mock

import pytest
from lsprotocol.types import Position, Range, TextDocumentContentChangePartial, TextDocumentContentChangeWholeDocument

from diffusion_infill.lsp.text import positions, rope
from diffusion_infill.lsp.text.documents import Documents, UnknownDocument
from diffusion_infill.lsp.text.positions import (
    UTF8,
    UTF16,
    UTF32,
    ColumnOutOfRange,
    LineOutOfRange,
    Lines,
    PositionError,
)
from diffusion_infill.lsp.text.rope import Rope

# "😀" is 1 code point, 2 UTF-16 units, 4 UTF-8 bytes; "中" is 1, 1, 3.
TEXT = "a😀中b\r\nsecond\x0cline\u2028same\nlast"


def test_lines_break_only_at_lsp_line_ends():
    lines = Lines(TEXT)
    assert len(lines) == 3
    assert lines.line(0) == "a😀中b"
    assert lines.line(1) == "second\x0cline\u2028same"  # form feed and U+2028 are not line ends in LSP
    assert lines.line(2) == "last"


@pytest.mark.parametrize(("encoding", "column"), [(UTF16, 4), (UTF8, 8), (UTF32, 3)])
def test_offset_after_emoji_and_cjk(encoding, column):
    # the offset just before "b": a + emoji + CJK
    assert Lines(TEXT).offset(Position(0, column), encoding) == 3
    assert Lines(TEXT).position(3, encoding) == Position(0, column)


@pytest.mark.parametrize(("encoding", "inside"), [(UTF16, 2), (UTF8, 2), (UTF8, 6)])
def test_position_inside_a_character_is_an_error(encoding, inside):
    with pytest.raises(PositionError):
        Lines(TEXT).offset(Position(0, inside), encoding)


def test_character_past_line_end_means_line_end_and_line_past_end_is_an_error():
    lines = Lines(TEXT)
    assert lines.offset(Position(0, 99), UTF16) == len("a😀中b")
    with pytest.raises(PositionError):
        lines.offset(Position(3, 0), UTF16)
    assert lines.offset(Position(3, 0), UTF16, clamp_line=True) == len(TEXT)
    with pytest.raises(PositionError):  # only the line right after the last is a place an editor can mean
        lines.offset(Position(4, 0), UTF16, clamp_line=True)


def test_a_character_offset_is_the_utf32_position_of_the_server_and_never_clamped():
    """The command line's PATH:LINE:COL and --range (0-based here) find the offsets an editor's utf-32
    positions find, on the same lines ("\r\n" one line end, form feed and U+2028 none); past a line's end
    or the last line it is an error that says how long the line is or how many lines there are."""
    lines = Lines(TEXT)
    for line in range(len(lines)):
        length = len(lines.line(line))
        for column in range(length + 1):
            assert lines.character_offset(line, column) == lines.offset(Position(line, column), UTF32)
        with pytest.raises(ColumnOutOfRange) as past_the_end:
            lines.character_offset(line, length + 1)
        assert past_the_end.value.length == length
    with pytest.raises(ColumnOutOfRange):
        lines.character_offset(0, -1)
    for line in (-1, 3):
        with pytest.raises(LineOutOfRange) as missing:
            lines.character_offset(line, 0)
        assert missing.value.lines == 3


def test_the_command_line_finds_positions_without_importing_lsprotocol():
    """lsprotocol.types takes about a second to import: `fix --range` and `complete PATH:LINE:COL` do not pay it."""
    probe = (
        "import sys\nfrom diffusion_infill.cli.complete import Location\n"
        "from diffusion_infill.cli.fix import Selection\n"
        "Location.parse('f.py:2:2').offset('ab\\ncd\\n'); Selection.parse('1:1-2:2', 'ab\\ncd\\n')\n"
        "print(sorted(name for name in ('lsprotocol', 'pygls', 'torch') if name in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_round_trip_every_offset():
    lines = Lines(TEXT)
    for encoding in (UTF8, UTF16, UTF32):
        for offset in range(len(TEXT) + 1):
            if TEXT[offset - 1 : offset + 1] == "\r\n":
                continue  # between \r and \n is no position
            assert lines.offset(lines.position(offset, encoding), encoding) == offset


def test_incremental_changes_apply_in_order():
    documents = Documents()
    documents.open("file:///a.py", "python", 1, "x = '😀'\nprint(x)\n")
    after_emoji = Position(0, 7)  # x, space, =, space, quote, emoji (2 units)
    documents.change(
        "file:///a.py",
        2,
        [
            TextDocumentContentChangePartial(range=Range(after_emoji, after_emoji), text="中文"),
            TextDocumentContentChangePartial(range=Range(Position(1, 6), Position(1, 7)), text="x, '😀'"),
        ],
        UTF16,
    )
    document = documents.get("file:///a.py")
    assert (document.version, str(document.text)) == (2, "x = '😀中文'\nprint(x, '😀')\n")
    documents.change("file:///a.py", 3, [TextDocumentContentChangeWholeDocument(text="new")], UTF16)
    assert str(documents.get("file:///a.py").text) == "new"


def test_unknown_document():
    with pytest.raises(UnknownDocument, match="not open"):
        Documents().get("file:///nowhere.py")


BREAKS = ["", "x", "\n", "\r", "\r\n", "x\ry", "\n\r", "😀\r"]


@pytest.mark.parametrize("block", [positions.BLOCK, 1, 2])  # small blocks: edits join, split and shift them
@pytest.mark.parametrize("text", ["a\r\nb\rc\nd", "\r\r\n\n", "😀\r\n中\r", "a\r\nb\rc\nd\n\ne\r\r\n"])
def test_line_starts_after_an_edit_are_those_of_the_new_text(monkeypatch, block, text):
    monkeypatch.setattr(positions, "BLOCK", block)
    # every place and span, with inserts that join or part a "\r" and a "\n" at either edge
    lines = Lines(text)
    for start in range(len(text) + 1):
        for end in range(start, len(text) + 1):
            for inserted in BREAKS:
                after = text[:start] + inserted + text[end:]
                edited = lines.edited(start, end, inserted, after)
                assert list(edited.starts) == list(Lines(after).starts), (start, end, inserted)
                for offset in range(len(after) + 1):
                    line = edited.position(offset, UTF32).line
                    assert edited.start(line) <= offset and (line + 1 == len(edited) or offset < edited.start(line + 1))


def test_a_keystroke_in_a_big_document_scans_only_around_the_edit():
    documents = Documents()
    text = "def f(x):\r\n    return x  # 中\r\n" * 20_000
    documents.open("file:///big.py", "python", 1, text)
    assert len(documents.get("file:///big.py").lines) == 40_001  # the one full scan, when first needed
    with mock.patch.object(positions, "_starts_after_breaks", wraps=positions._starts_after_breaks) as scan:
        middle = Position(10_001, 4)
        documents.change(
            "file:///big.py", 2, [TextDocumentContentChangePartial(range=Range(middle, middle), text="y\r\n")], UTF16
        )
        lines = documents.get("file:///big.py").lines
    assert [high - low for _, low, high in (call.args for call in scan.call_args_list)] == [4]
    assert lines.line(10_001) == "    y" and lines.line(10_002) == "return x  # 中"
    assert list(lines.starts) == list(Lines(lines.text).starts)


@pytest.mark.parametrize(("encoding", "units_before"), [(UTF16, 2), (UTF8, 4), (UTF32, 1)])
def test_conversions_at_the_end_of_a_long_line_after_a_wide_character(encoding, units_before):
    length = 1_000_000
    lines = Lines("😀" + "a" * length + "中\nnext")
    end = Position(0, units_before + length)
    assert lines.offset(end, encoding) == 1 + length
    assert lines.position(1 + length, encoding) == end
    assert lines.offset(Position(0, 10**9), encoding) == 2 + length  # past the end: the line's end
    assert lines.offset(Position(1, 2), encoding) == 2 + length + 1 + 2
    if encoding == UTF8:
        with pytest.raises(PositionError):
            lines.offset(Position(0, units_before + length + 1), encoding)  # inside "中"


def test_a_keystroke_in_a_file_of_240000_lines_copies_a_block_of_line_starts_not_all():
    text = "x = 1\n" * 240_000
    lines = Lines(text)
    middle = len(text) // 2
    after = text[:middle] + "y\n" + text[middle:]
    tracemalloc.start()
    try:
        edited = lines.edited(middle, middle, "y\n", after)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(edited) == 240_002 and edited.line(120_000) == "y" and edited.line(120_001) == "x = 1"
    assert peak < 3 * 2 * positions.BLOCK * 8 + 100_000  # all starts would be 1.9 MB, twice


def test_positions_in_a_rope_are_those_in_the_str_after_every_edit(monkeypatch):
    monkeypatch.setattr(rope, "PIECE", 3)  # lines across many pieces, counts kept across edits
    generator, text = random.Random(11), "a😀中b\r\nsecond 😀😀 line\nlast中"
    kept = Rope(text)
    for _ in range(60):
        start = generator.randrange(len(text) + 1)
        end = min(len(text), start + generator.choice([0, 1, 3]))
        inserted = generator.choice(["", "y", "😀", "中x", "\n"])
        text, kept = text[:start] + inserted + text[end:], kept.replaced(start, end, inserted)
        lines, reference = Lines(kept), Lines(text)
        for encoding in (UTF8, UTF16):
            for offset in range(len(text) + 1):
                assert lines.position(offset, encoding) == reference.position(offset, encoding)
            for line in range(len(reference)):
                for character in range(4 * len(reference.line(line)) + 2):
                    try:
                        expected = reference.offset(Position(line, character), encoding)
                    except PositionError:
                        with pytest.raises(PositionError):
                            lines.offset(Position(line, character), encoding)
                        continue
                    assert lines.offset(Position(line, character), encoding) == expected


def test_a_keystroke_at_the_end_of_a_long_line_with_an_emoji_encodes_a_piece_not_the_line():
    documents = Documents()
    text = "😀" + "a" * 2_000_000
    documents.open("file:///long.json", "json", 1, text)
    end = Position(0, 2 + 2_000_000)
    assert documents.get("file:///long.json").lines.position(len(text), UTF16) == end  # pieces counted once
    tracemalloc.start()
    try:
        typed = TextDocumentContentChangePartial(range=Range(end, end), text="b")
        documents.change("file:///long.json", 2, [typed], UTF16)
        lines = documents.get("file:///long.json").lines
        after = Position(0, end.character + 1)
        assert lines.offset(after, UTF16) == len(text) + 1 and lines.position(len(text) + 1, UTF16) == after
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 500_000  # the line in UTF-16 is 4 MB
