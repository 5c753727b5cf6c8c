"""LSP positions <-> offsets into a Python `str`, in the negotiated position encoding.

A Python `str` indexes code points (UTF-32 units). LSP counts `character` in UTF-16 code
units unless `positionEncoding` says utf-8 or utf-32, so an emoji is 2 units in UTF-16
and 4 in UTF-8, a CJK character 1 and 3. Lines end at "\\r\\n", "\\r" or "\\n" only:
`str.splitlines` also splits at form feeds, U+2028 and others, which would shift every
line number after them (pygls' own text document uses it, hence this module).

The command line's PATH:LINE:COL and --range (cli.complete, cli.fix) are found here too, in characters
(`Lines.character_offset`), so that its lines end where the server's do.
"""

from __future__ import annotations

from bisect import bisect_right
from functools import partial
from itertools import accumulate
from typing import TYPE_CHECKING

import numpy as np

from diffusion_infill.lsp.text.rope import Rope

if TYPE_CHECKING:
    from lsprotocol.types import Position

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
BLOCK = 4_096  # line starts in a block of Lines
_CODECS = {UTF8: ("utf-8", 1), UTF16: ("utf-16-le", 2)}  # Python codec, bytes per code unit


class PositionError(ValueError):
    """A position that names no place in the document."""


class LineOutOfRange(PositionError):
    """A line past the text's last one."""

    def __init__(self, line: int, lines: int):
        super().__init__(f"line {line} is out of range: the document has {lines} lines")
        self.lines = lines  # how many the text has


class ColumnOutOfRange(PositionError):
    """A column past the end of its line (Lines.character_offset: LSP's positions clamp it instead)."""

    def __init__(self, line: int, column: int, length: int):
        super().__init__(f"character {column} of line {line} is out of range: the line has {length} characters")
        self.length = length  # the line's characters, without its line break


def units(text: str, encoding: str) -> int:
    """Code units `text` takes in `encoding` (what an LSP `character` counts)."""
    if encoding == UTF32 or text.isascii():  # isascii is a flag CPython keeps: O(1)
        return len(text)
    codec, width = _CODECS[encoding]
    return len(text.encode(codec, "surrogatepass")) // width


_COUNTS = {UTF8: partial(units, encoding=UTF8), UTF16: partial(units, encoding=UTF16)}  # Rope.count's keys


def _units_between(text: str | Rope, start: int, end: int, encoding: str) -> int:
    """`units(text[start:end], encoding)`; on a rope, a long line's whole pieces are counted once, not
    encoded again at every keystroke."""
    if isinstance(text, Rope):
        return text.count(start, end, _COUNTS[encoding])
    return units(text[start:end], encoding)


def _starts_after_breaks(text: str | Rope, low: int, high: int) -> np.ndarray:
    """The line starts `x` with low < x <= high: each right after a "\n", or after a "\r" that no
    "\n" follows. One vectorised pass over text[low:high + 1] (the last character only tells
    whether a "\r" just before it is half of a "\r\n")."""
    piece = text[low : high + 1]
    if piece.isascii():
        chars = np.frombuffer(piece.encode("ascii"), dtype=np.uint8)
    else:
        chars = np.frombuffer(piece.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    newline, carriage = chars == 10, chars == 13
    followed_by_newline = np.append(newline[1:], False)
    ends = np.flatnonzero(newline | (carriage & ~followed_by_newline))
    return ends[ends < high - low] + (low + 1)


def _blocked(starts: np.ndarray, most: int) -> tuple[list[np.ndarray], list[int]]:
    """Line starts in blocks of BLOCK (one block when there are at most `most`), each block relative
    to its first start, and those first starts."""
    size = BLOCK if len(starts) > most else len(starts)
    bases = [int(starts[i]) for i in range(0, len(starts), size)]
    return [starts[i * size : (i + 1) * size] - base for i, base in enumerate(bases)], bases


class Lines:
    """Where each line of a text starts, for position <-> offset conversion.

    The starts are found in one vectorised pass, and after an edit only around the edit
    (`edited`). They are kept in blocks of about BLOCK lines, each relative to its first line's
    start, so an edit rebuilds the block it falls in and moves the later blocks' bases: a
    keystroke in a 240,000-line file copies a few thousand starts, not all of them.
    Conversions within a line take an ASCII fast path (no slicing at all when the whole text
    is ASCII) and otherwise one encode of the part of the line they need, in C.
    """

    def __init__(self, text: str | Rope, blocks: list[np.ndarray] | None = None, bases: list[int] | None = None):
        self.text = text
        if blocks is None or bases is None:
            blocks, bases = _blocked(np.concatenate(([0], _starts_after_breaks(text, 0, len(text)))), BLOCK)
        self._blocks, self._bases = blocks, bases  # block b's line starts are bases[b] + blocks[b]
        self._firsts = [0, *accumulate(map(len, blocks))]  # block b's first line; then the count

    def __len__(self) -> int:
        return self._firsts[-1]

    @property
    def starts(self) -> np.ndarray:
        """The offset of each line's first character."""
        return np.concatenate([block + base for block, base in zip(self._blocks, self._bases, strict=True)])

    def start(self, index: int) -> int:
        block = bisect_right(self._firsts, index) - 1
        return self._bases[block] + int(self._blocks[block][index - self._firsts[block]])

    def end(self, index: int) -> int:
        """The offset of line `index`'s end, before its line break."""
        if index + 1 >= len(self):
            return len(self.text)
        following = self.start(index + 1)
        return following - (2 if self.text[following - 2 : following] == "\r\n" else 1)

    def _bounds(self, index: int) -> tuple[int, int]:
        """Where line `index` starts and ends; LineOutOfRange when the text has no such line."""
        if not 0 <= index < len(self):
            raise LineOutOfRange(index, len(self))
        return self.start(index), self.end(index)

    def line(self, index: int) -> str:
        """The text of line `index`, without its line break."""
        return self.text[self.start(index) : self.end(index)]

    def _line_of(self, offset: int) -> int:
        """The index of the line holding `offset`."""
        block = bisect_right(self._bases, offset) - 1
        return self._firsts[block] + int(np.searchsorted(self._blocks[block], offset - self._bases[block], "right")) - 1

    def edited(self, start: int, end: int, inserted: str, text: str | Rope) -> Lines:
        """The lines of `text`, which is this text with [start, end) replaced by `inserted`.

        A start depends only on the two characters around it, so those before the edit stay,
        those after it shift, and only the edit's own span (and one character either side, where
        a "\r" and a "\n" may join or part) is scanned.
        """
        low, high, shift = max(start - 1, 0), start + len(inserted), start + len(inserted) - end
        # The blocks from the one holding `low` to the one holding `end`: before them every start
        # is at most `low` (kept), after them every start is past `end` (shifted with their base).
        first, last = bisect_right(self._bases, low) - 1, bisect_right(self._bases, end) - 1
        touched = np.concatenate([self._blocks[b] + self._bases[b] for b in range(first, last + 1)])
        before = touched[: np.searchsorted(touched, low, "right")]
        after = touched[np.searchsorted(touched, end + 1, "left") :] + shift
        blocks, bases = _blocked(np.concatenate((before, _starts_after_breaks(text, low, high), after)), 2 * BLOCK)
        return Lines(
            text,
            [*self._blocks[:first], *blocks, *self._blocks[last + 1 :]],
            [*self._bases[:first], *bases, *(base + shift for base in self._bases[last + 1 :])],
        )

    def offset(self, position: Position, encoding: str, clamp_line: bool = False) -> int:
        """The offset in `text` of `position`.

        A `character` past the end of its line means the line's end (the LSP spec says so);
        A position inside one code point's units is an error, and so is a line past the last one;
        with `clamp_line`, the line right after the last means the document's end (edits at the
        very end of a document sometimes name it), but a line further on is still an error: no
        editor means it (issue 34's rule).
        """
        if clamp_line and position.line == len(self):
            return len(self.text)
        (start, end), column = self._bounds(position.line), position.character
        if encoding == UTF32 or self.text.isascii():
            return min(start + column, end)
        if isinstance(self.text, Rope):  # past the whole pieces before the column, counted once
            start, column = self.text.skip(start, end, column, _COUNTS[encoding])
        head = self.text[start : min(start + column, end)]  # every code point is at least one unit
        codec, width = _CODECS[encoding]
        encoded = head.encode(codec, "surrogatepass")
        if head.isascii() or len(encoded) <= column * width:
            return start + len(head)
        try:
            return start + len(encoded[: column * width].decode(codec))
        except UnicodeDecodeError:
            raise PositionError(
                f"character {position.character} of line {position.line} falls inside a character ({encoding})"
            ) from None

    def character_offset(self, line: int, column: int) -> int:
        """The offset of 0-based `line` and `column`, the column counted in characters (code points) and
        never clamped: a command line's number past the end is a mistake to report (LineOutOfRange,
        ColumnOutOfRange), where an editor's position past a line's end means its end."""
        start, end = self._bounds(line)
        if not 0 <= column <= end - start:
            raise ColumnOutOfRange(line, column, end - start)
        return start + column

    def position(self, offset: int, encoding: str) -> Position:
        """The position of `offset` in `text`, in `encoding` units."""
        # Imported here: lsprotocol.types takes about a second to import, which the command line's
        # character_offset (cli.complete, cli.fix) does not pay; once imported this is a dictionary lookup.
        from lsprotocol.types import Position

        if not 0 <= offset <= len(self.text):
            raise PositionError(f"offset {offset} is outside the text")
        line = self._line_of(offset)
        start = self.start(line)
        # An offset between "\r" and "\n" is not a position; it belongs to the line's end.
        column = min(offset, self.end(line)) - start
        if encoding != UTF32 and not self.text.isascii():
            column = _units_between(self.text, start, start + column, encoding)
        return Position(line=line, character=column)
