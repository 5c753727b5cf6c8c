"""LSP positions <-> offsets into a Python `str`, in the negotiated position encoding.

A Python `str` indexes code points (UTF-32 units). LSP counts `character` in UTF-16 code
units unless `positionEncoding` says utf-8 or utf-32, so an emoji is 2 units in UTF-16
and 4 in UTF-8, a CJK character 1 and 3. Lines end at "\\r\\n", "\\r" or "\\n" only:
`str.splitlines` also splits at form feeds, U+2028 and others, which would shift every
line number after them (pygls' own text document uses it, hence this module).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field

from lsprotocol.types import Position

UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


class PositionError(ValueError):
    """A position that names no place in the document."""


def char_units(char: str, encoding: str) -> int:
    """Code units one code point takes in `encoding`."""
    point = ord(char)
    if encoding == UTF32:
        return 1
    if encoding == UTF8:
        return 1 if point < 0x80 else 2 if point < 0x800 else 3 if point < 0x10000 else 4
    return 2 if point > 0xFFFF else 1


def units(text: str, encoding: str) -> int:
    """Code units `text` takes in `encoding` (what an LSP `character` counts)."""
    if encoding == UTF32:
        return len(text)
    return sum(char_units(char, encoding) for char in text)


@dataclass(frozen=True)
class Lines:
    """Where each line of a text starts and ends, for position <-> offset conversion."""

    text: str
    starts: tuple[int, ...] = field(init=False)  # offset of each line's first character
    ends: tuple[int, ...] = field(init=False)  # offset of each line's end, before its line break

    def __post_init__(self) -> None:
        breaks = list(_LINE_BREAK.finditer(self.text))
        object.__setattr__(self, "starts", (0, *(match.end() for match in breaks)))
        object.__setattr__(self, "ends", (*(match.start() for match in breaks), len(self.text)))

    def __len__(self) -> int:
        return len(self.starts)

    def line(self, index: int) -> str:
        """The text of line `index`, without its line break."""
        return self.text[self.starts[index] : self.ends[index]]

    def offset(self, position: Position, encoding: str, clamp_line: bool = False) -> int:
        """The offset in `text` of `position`.

        A `character` past the end of its line means the line's end (the LSP spec says so);
        a line past the last one is an error unless `clamp_line` (edits at the very end of a
        document sometimes end there), and so is a position inside one code point's units.
        """
        if position.line >= len(self):
            if clamp_line:
                return len(self.text)
            raise PositionError(f"line {position.line} is out of range: the document has {len(self)} lines")
        start, end = self.starts[position.line], self.ends[position.line]
        if encoding == UTF32:
            return min(start + position.character, end)
        seen = 0
        for offset in range(start, end):
            if seen == position.character:
                return offset
            seen += char_units(self.text[offset], encoding)
            if seen > position.character:
                raise PositionError(
                    f"character {position.character} of line {position.line} falls inside a character ({encoding})"
                )
        return end

    def position(self, offset: int, encoding: str) -> Position:
        """The position of `offset` in `text`, in `encoding` units."""
        if not 0 <= offset <= len(self.text):
            raise PositionError(f"offset {offset} is outside the text")
        line = bisect_right(self.starts, offset) - 1
        # An offset between "\r" and "\n" is not a position; it belongs to the line's end.
        column = min(offset, self.ends[line]) - self.starts[line]
        return Position(line=line, character=units(self.text[self.starts[line] : self.starts[line] + column], encoding))
