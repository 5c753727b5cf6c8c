"""Where a repair changed a text, and by how much, in time linear in the text at any size.

The common start and end of the two texts are skipped first: a repair changes a few places and
keeps the rest as the user wrote it. What lies between is matched with difflib character by
character (line by line first) while the pairs its matcher may weigh stay within `BUDGET`, else
token by token (words, runs of white space, single marks), else it counts as one replacement.
difflib's matching is quadratic, so unbounded it took minutes on a 50 kB line. Past the budget,
precision goes where nothing needs it: the model's canvas holds a few hundred tokens (a longer
selection gets no candidate from it), and edit sizes only break ties between candidates.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from diffusion_infill.engine.repair.spans import Span

# Element pairs (characters, lines or tokens, one sequence's count times the other's) handed to
# difflib for one comparison: about a tenth of a second of its matching on JSON-like text.
BUDGET = 250_000
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
_CHUNK = 4096  # characters compared at a time while skipping the common start and end


@dataclass(frozen=True)
class Change:
    """`before[start:end]` became `after[new_start:new_end]`; either may be empty."""

    start: int
    end: int
    new_start: int
    new_end: int

    @property
    def size(self) -> int:
        return max(self.end - self.start, self.new_end - self.new_start)


@dataclass(frozen=True)
class Diff:
    changes: tuple[Change, ...]
    compared: int  # element pairs difflib weighed: at most BUDGET per changed block, whatever the size

    @property
    def size(self) -> int:
        """Characters inserted, deleted or replaced."""
        return sum(change.size for change in self.changes)

    @property
    def spans(self) -> list[Span]:
        """Where `after` differs from `before`, as spans of `before`."""
        return [Span(change.start, change.end) for change in self.changes]


def diff(before: str, after: str) -> Diff:
    """The changes that turn `before` into `after`."""
    head = _common_prefix(before, after)
    tail = _common_suffix(before, after, min(len(before), len(after)) - head)
    old, new = before[head : len(before) - tail], after[head : len(after) - tail]
    if not old and not new:
        return Diff((), 0)
    changes, compared = (_by_lines if len(old) * len(new) <= BUDGET else _by_tokens)(old, new)
    moved = (Change(c.start + head, c.end + head, c.new_start + head, c.new_end + head) for c in changes)
    return Diff(tuple(moved), compared)


def _common_prefix(a: str, b: str) -> int:
    """Characters `a` and `b` start with alike, compared a chunk at a time (a loop over characters
    would cost seconds on 10 MB)."""
    limit, index = min(len(a), len(b)), 0
    while index < limit and a[index : index + _CHUNK] == b[index : index + _CHUNK]:
        index += _CHUNK
    index = min(index, limit)
    while index < limit and a[index] == b[index]:
        index += 1
    return index


def _common_suffix(a: str, b: str, limit: int) -> int:
    """Characters `a` and `b` end with alike, at most `limit`, compared as `_common_prefix` does."""
    index = 0
    while index < limit:
        step = min(_CHUNK, limit - index)
        if a[len(a) - index - step : len(a) - index] != b[len(b) - index - step : len(b) - index]:
            break
        index += step
    while index < limit and a[len(a) - index - 1] == b[len(b) - index - 1]:
        index += 1
    return index


def _matched(old: Sequence, new: Sequence) -> list[tuple[int, int, int, int]]:
    """difflib's unequal blocks of two sequences: (i1, i2, j1, j2) element indices."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def _starts(pieces: list[str]) -> list[int]:
    """Offset of each piece in their concatenation, and the end."""
    return list(accumulate(map(len, pieces), initial=0))


def _by_lines(old: str, new: str) -> tuple[list[Change], int]:
    """Character-level changes, lines first: within blocks of changed lines only."""
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    old_starts, new_starts = _starts(old_lines), _starts(new_lines)
    changes, compared = [], len(old_lines) * len(new_lines)
    for i1, i2, j1, j2 in _matched(old_lines, new_lines):
        a, b = old_starts[i1], new_starts[j1]
        old_block, new_block = old[a : old_starts[i2]], new[b : new_starts[j2]]
        compared += len(old_block) * len(new_block)
        changes += [Change(a + k1, a + k2, b + m1, b + m2) for k1, k2, m1, m2 in _matched(old_block, new_block)]
    return changes, compared


def _by_tokens(old: str, new: str) -> tuple[list[Change], int]:
    """Token-level changes; one replacement of the whole when even tokens are too many to match."""
    old_tokens, new_tokens = _TOKEN.findall(old), _TOKEN.findall(new)
    if len(old_tokens) * len(new_tokens) > BUDGET:
        return [Change(0, len(old), 0, len(new))], 0
    old_starts, new_starts = _starts(old_tokens), _starts(new_tokens)
    changes = [
        Change(old_starts[i1], old_starts[i2], new_starts[j1], new_starts[j2])
        for i1, i2, j1, j2 in _matched(old_tokens, new_tokens)
    ]
    return changes, len(old_tokens) * len(new_tokens)
