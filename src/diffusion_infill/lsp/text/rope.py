"""A document's text as a row of pieces, so that an edit costs the size of the edit, not of the document.

A Python `str` is immutable: replacing one character of a 10 MB `str` allocates and copies
10 MB (milliseconds a keystroke, and more when the allocator has to map fresh pages). A `Rope`
keeps the text as pieces of at most `PIECE` characters: an edit makes a new rope that shares
every piece but the one or two it touches, so earlier versions stay valid (a diagnostic computed
for version 3 still reads version 3) and nothing is copied twice. Slicing a rope gives a `str`:
the completion window, a selection, a line. What each piece takes in UTF-16 or UTF-8 is counted
once and kept across edits (`count`, `skip`): LSP columns count those units, and a long line
outside ASCII would otherwise be encoded again at every keystroke.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate

PIECE = 16_384  # characters: a keystroke copies at most about two pieces
Count = Callable[[str], int]  # what a text takes in some unit (UTF-16 code units): the sum of its pieces'


def _cut(text: str) -> list[str]:
    """`text` in pieces of at most PIECE characters (none when it is empty)."""
    return [text[start : start + PIECE] for start in range(0, len(text), PIECE)]


class Rope:
    """An immutable text in pieces; `str(rope)` joins them."""

    __slots__ = ("pieces", "_starts", "_ascii", "_counts")

    def __init__(self, text: str = "", pieces: tuple[str, ...] | None = None):
        self.pieces: tuple[str, ...] = tuple(_cut(text)) if pieces is None else pieces
        # the offset of each piece's first character, and the length of the text last
        self._starts = [0, *accumulate(map(len, self.pieces))]
        self._ascii: bool | None = None
        self._counts: dict[Count, list[int | None]] = {}  # per Count: each piece's, once asked for

    def __len__(self) -> int:
        return self._starts[-1]

    def __str__(self) -> str:
        return "".join(self.pieces)

    def __repr__(self) -> str:
        return f"Rope({len(self):,} characters in {len(self.pieces)} pieces)"

    def isascii(self) -> bool:
        if self._ascii is None:
            self._ascii = all(piece.isascii() for piece in self.pieces)
        return self._ascii

    def _piece(self, offset: int) -> int:
        """The index of the piece holding `offset` (the last piece for the end of the text)."""
        return min(bisect_right(self._starts, offset) - 1, len(self.pieces) - 1)

    def __getitem__(self, key: slice) -> str:
        """The text of a slice (no step), as `str` would slice it."""
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("a rope is sliced with [start:end] only")
        start, end, _ = key.indices(len(self))
        if start >= end:
            return ""
        first, last = self._piece(start), self._piece(end - 1)
        low, high = start - self._starts[first], end - self._starts[last]
        if first == last:
            return self.pieces[first][low:high]
        return "".join((self.pieces[first][low:], *self.pieces[first + 1 : last], self.pieces[last][:high]))

    def replaced(self, start: int, end: int, inserted: str) -> Rope:
        """This text with [start, end) replaced by `inserted`: a new rope sharing the untouched pieces."""
        if not 0 <= start <= end <= len(self):
            raise IndexError(f"[{start}, {end}) is not within a text of {len(self)} characters")
        if not self.pieces:
            return Rope(inserted)
        first, last = self._piece(start), self._piece(max(start, end - 1))
        head = self.pieces[first][: start - self._starts[first]]
        tail = self.pieces[last][end - self._starts[last] :]
        middle = head + inserted + tail
        # A piece grows by what is typed into it until it is twice PIECE long, then is cut again.
        new = [middle] if 0 < len(middle) <= 2 * PIECE else _cut(middle)  # _cut("") is no piece
        edited = Rope(pieces=(*self.pieces[:first], *new, *self.pieces[last + 1 :]))
        if self._ascii and inserted.isascii():
            edited._ascii = True  # known without asking every piece again
        for count, counts in self._counts.items():  # the untouched pieces keep theirs
            edited._counts[count] = [*counts[:first], *[None] * len(new), *counts[last + 1 :]]
        return edited

    def _counted(self, first: int, last: int, count: Count) -> list[int]:
        """The counts of pieces first..last-1, counted where not yet known."""
        counts = self._counts.setdefault(count, [None] * len(self.pieces))
        if None in counts[first:last]:
            for index in range(first, last):
                if counts[index] is None:
                    counts[index] = count(self.pieces[index])
        return counts[first:last]

    def count(self, start: int, end: int, count: Count) -> int:
        """`count(self[start:end])`, counting only the parts of the pieces at either end: the whole
        pieces between them are counted once and remembered, in this rope and those edited from it."""
        if start >= end:
            return 0
        first, last = self._piece(start), self._piece(end - 1)
        if first == last:
            return count(self[start:end])
        inside = sum(self._counted(first + 1, last, count))
        return count(self[start : self._starts[first + 1]]) + inside + count(self[self._starts[last] : end])

    def skip(self, start: int, end: int, budget: int, count: Count) -> tuple[int, int]:
        """From `start`, past the rest of its piece and then whole pieces, each only if it ends by `end`
        and its count still fits in `budget`: the offset reached and the budget left (what remains is
        within the next piece: the caller's to count)."""
        index = self._piece(start)
        if start > self._starts[index]:  # the rest of the piece `start` is in
            if self._starts[index + 1] > end or (part := count(self[start : self._starts[index + 1]])) > budget:
                return start, budget
            start, budget, index = self._starts[index + 1], budget - part, index + 1
        ending = bisect_right(self._starts, end) - 1  # pieces before this one end by `end`
        sums = list(accumulate(self._counted(index, max(index, ending), count)))
        if taken := bisect_right(sums, budget):  # the whole pieces that fit
            start, budget = self._starts[index + taken], budget - sums[taken - 1]
        return start, budget
