"""Whole-line candidates copied from the code the editor holds, for the model to judge.

Code repeats: the line being typed is often an edited copy of a line above it, or of a line
in another open file. At a cursor that ends its line (or sits before closers the editor typed
by itself), the candidates for the rest of the line are:

- `same`: earlier lines holding the last tokens before the cursor, each giving what follows
  them up to its end (more tokens matched first, then the nearest line);
- `analogous`: the line after an earlier line that looks like the line before the cursor
  (`def count_lines` then `return len(self.lines)`), with the identifiers that differ between
  those two lines swapped (`lines` -> `words`) when the cursor's line starts like it;
- `document`: the document's own draft (engine.completion.repeated_text: the first tokens that
  every earlier place of the last few tokens goes on with).

Each candidate says how many earlier lines give the same text (`agree`). Work per request is
bounded: the last MAX_LINES lines of the document and of each other document.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from diffusion_infill.engine.completion import repeated_text
from diffusion_infill.engine.completion.auto_pairs import auto_paired_closers
from diffusion_infill.engine.requests import InfillRequest

TOKEN = re.compile(r"\w+|[^\w\s]")
IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
MAX_LINES = 2_000  # lines searched before the cursor, and in each other document
MAX_TAIL_TOKENS = 6  # the most tokens before the cursor matched in an earlier line
MIN_MATCH_CHARS = 2  # a match this short (`(`, `.`) says too little unless the line starts with it
MAX_CANDIDATES = 6
MAX_CHARS = 160  # a longer rest of a line is not offered as one suggestion


@dataclass(frozen=True)
class CopiedLine:
    """A rest of the cursor's line copied from the code, for the judge (a repair's candidate is
    engine.repair.fixes.Candidate)."""

    text: str  # what to insert at the cursor
    rule: str  # "same", "analogous" or "document"
    matched: int  # tokens before the cursor that the source line shares
    agree: int  # earlier lines that give this same text
    distance: int  # lines between the nearest source line and the cursor


@dataclass(frozen=True)
class _Copy:
    text: str
    rule: str
    matched: int
    distance: int


def candidates(request: InfillRequest, others: Sequence[str] = (), most: int = MAX_CANDIDATES) -> list[CopiedLine]:
    """The best `most` candidates for the rest of the cursor's line; none where the cursor does not
    end its line (closers the editor typed by itself aside: a candidate ending with them drops them)."""
    closers = auto_paired_closers(request.suffix, 0)
    if request.suffix.split("\n", 1)[0].strip() and not closers:
        return []
    before, _, head = request.prefix.rpartition("\n")
    if not head.strip():
        return []  # a new line's indentation: nothing of it to match yet
    lines = before.split("\n")[-MAX_LINES:]
    found = list(_same(head, lines)) + list(_analogous(head, lines))
    draft = repeated_text.document_draft(request.prefix)
    if draft is not None:
        found.append(_Copy(draft.text, "document", draft.matched_tokens, 1))
    for other in others:
        found += [_Copy(f.text, f.rule, f.matched, MAX_LINES) for f in _same(head, other.split("\n")[-MAX_LINES:])]
    if closers:
        found = [
            _Copy(f.text.removesuffix(closers), f.rule, f.matched, f.distance)
            for f in found
            if f.text.endswith(closers)
        ]
    return _ranked([f for f in found if f.text.strip() and len(f.text) <= MAX_CHARS], most)


def _ranked(found: list[_Copy], most: int) -> list[CopiedLine]:
    """One candidate per text: its best source, and how many sources agree on it."""
    best: dict[str, _Copy] = {}
    agree: dict[str, int] = {}
    for f in found:
        agree[f.text] = agree.get(f.text, 0) + 1
        kept = best.get(f.text)
        if kept is None or (f.matched, -f.distance) > (kept.matched, -kept.distance):
            best[f.text] = f
    order = sorted(best.values(), key=lambda f: (f.matched, agree[f.text], -f.distance), reverse=True)
    return [CopiedLine(f.text, f.rule, f.matched, agree[f.text], f.distance) for f in order[:most]]


def _tails(head: str) -> list[str]:
    """The end of `head` from each of its last MAX_TAIL_TOKENS tokens, longest first."""
    starts = [match.start() for match in TOKEN.finditer(head)][-MAX_TAIL_TOKENS:]
    return [head[start:] for start in starts]


def _same(head: str, lines: Sequence[str]) -> Iterable[_Copy]:
    """Per earlier line, the rest after the longest end of `head` it holds at a token boundary."""
    tails = _tails(head)
    whole = head.lstrip()
    for distance, line in enumerate(reversed(lines), start=1):
        if line.lstrip().startswith(whole) and len(line.lstrip()) > len(whole):
            rest = line.lstrip()[len(whole) :]
            yield _Copy(rest.rstrip(), "same", len(TOKEN.findall(whole)), distance)
            continue
        for count, tail in zip(range(len(tails), 0, -1), tails, strict=True):
            if len(tail) < MIN_MATCH_CHARS:
                break
            at = _find_at_boundary(line, tail)
            if at is not None and at + len(tail) < len(line.rstrip()):
                yield _Copy(line[at + len(tail) :].rstrip(), "same", count, distance)
                break


def _find_at_boundary(line: str, tail: str) -> int | None:
    """Where `tail` starts in `line` at a token boundary (the last such place), or None."""
    end = len(line)
    while (at := line.rfind(tail, 0, end)) != -1:
        if not (_word_char(tail[0]) and at > 0 and _word_char(line[at - 1])):
            return at
        end = at + len(tail) - 1
    return None


def _analogous(head: str, lines: Sequence[str]) -> Iterable[_Copy]:
    """The line after an earlier line like the cursor's previous one, its differing identifiers swapped."""
    if not lines:
        return
    previous = lines[-1]
    shape = _shape(previous)
    if not shape.strip():
        return
    for index in range(len(lines) - 2, -1, -1):
        if index + 1 >= len(lines) - 1 or _shape(lines[index]) != shape:
            continue
        swaps = _swaps(lines[index], previous)
        if swaps is None:
            continue
        following = _swapped(lines[index + 1], swaps)
        if following.startswith(head) and len(following.rstrip()) > len(head):
            yield _Copy(following[len(head) :].rstrip(), "analogous", len(TOKEN.findall(head)), len(lines) - index)


def _shape(line: str) -> str:
    """`line` with every identifier replaced by one mark: lines of one shape differ only in names."""
    return IDENTIFIER.sub("_", line)


def _swaps(earlier: str, later: str) -> dict[str, str] | None:
    """The renaming that turns `earlier` into `later` (same shape), by whole identifiers and by the
    parts of snake_case ones (`count_lines` -> `count_words` also renames `lines` -> `words`); None
    when they are the same line or a name would map two ways."""
    swaps: dict[str, str] = {}
    for old, new in zip(IDENTIFIER.findall(earlier), IDENTIFIER.findall(later), strict=True):
        pairs = [(old, new)]
        old_parts, new_parts = old.split("_"), new.split("_")
        if len(old_parts) == len(new_parts):
            pairs += [(a, b) for a, b in zip(old_parts, new_parts, strict=True) if a and b]
        for a, b in pairs:
            if swaps.setdefault(a, b) != b:
                return None
    changed = {a: b for a, b in swaps.items() if a != b}
    return changed or None


def _swapped(line: str, swaps: dict[str, str]) -> str:
    """`line` with its identifiers renamed: whole names first, else their snake_case parts."""

    def rename(match: re.Match) -> str:
        name = match.group()
        if name in swaps:
            return swaps[name]
        return "_".join(swaps.get(part, part) for part in name.split("_"))

    return IDENTIFIER.sub(rename, line)


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"
