"""Drafts from the document itself: code repeats, so what followed the same few tokens
earlier in the file is a likely continuation at the cursor.

The last few code tokens before the cursor (words, numbers, single punctuation marks) are
looked for earlier in the text before the cursor, exactly, whitespace included; the most
tokens that are found decide the earlier places. What follows all of those places alike,
at most MAX_DRAFT_TOKENS tokens of a line, is the draft.

A draft is offered where the cursor ends its line, or where only closers the editor typed by
itself follow it (VS Code's `sum(1 for x in li|)`): then a draft that ends with those closers is
offered without them, since they are there already, and one that holds no closer at all (the first
tokens of what the brackets hold: `TextWrapper(|)` with `width=width,`) is offered as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from diffusion_infill.engine import syntax_check
from diffusion_infill.engine.completion.auto_pairs import AUTO_PAIR_CLOSERS, auto_paired_closers
from diffusion_infill.engine.requests import InfillRequest

TOKEN = re.compile(r"\w+|[^\w\s]")
_WORD_REST = re.compile(r"\w*")
MIN_TOKENS = 3  # fewer matched tokens say little: `self.` or `)` repeat everywhere
MAX_TOKENS = 8  # more context than this rarely changes which earlier places are found
MAX_TOKEN_CHARS = 64  # characters a token and its spaces take at most, where the last tokens are looked for
# A whole rest of a line was right 39% of the time on the tuning excerpts, its first 4 tokens
# 55%, its first 2 65% (with less typing saved): 4 saves most at the precision the gate wants.
MAX_DRAFT_TOKENS = 4


@dataclass(frozen=True)
class DocumentDraft:
    text: str  # what to insert at the cursor
    matched_tokens: int  # tokens before the cursor that the earlier places share
    places: int  # earlier places with those tokens and a line after them


def document_draft(prefix: str) -> DocumentDraft | None:
    """The draft at the end of `prefix`; None when its last tokens do not occur earlier or
    what follows them there has nothing in common."""
    starts = [match.start() for match in TOKEN.finditer(prefix, _window_start(prefix))]
    for count in range(min(MAX_TOKENS, len(starts)), MIN_TOKENS - 1, -1):
        tail = prefix[starts[-count] :]
        lines = list(_lines_after(prefix, tail))
        if not lines:
            continue
        text = _common_start(lines, MAX_DRAFT_TOKENS)
        if not text.strip():
            return None
        return DocumentDraft(text, count, len(lines))
    return None


def _window_start(prefix: str) -> int:
    """Where the last MAX_TOKENS tokens can begin at the earliest: a few lines back is plenty, and
    MAX_TOKEN_CHARS characters a token (a long line is not tokenized whole at every keystroke); a
    word cut by that start is left out."""
    newline = len(prefix)
    for _ in range(4):
        newline = prefix.rfind("\n", 0, newline)
        if newline == -1:
            break
    start = max(newline + 1, len(prefix) - MAX_TOKENS * MAX_TOKEN_CHARS)
    if 0 < start < len(prefix) and _word_char(prefix[start - 1]):
        return _WORD_REST.match(prefix, start).end()
    return start


def _lines_after(prefix: str, tail: str):
    """The rest of the line after each earlier occurrence of `tail` that starts at a token boundary
    and whose line ends before the cursor's."""
    end = prefix.rfind("\n")  # an occurrence ending here or before has a line end after it
    while end > 0 and (found := prefix.rfind(tail, 0, end)) != -1:
        end = found + len(tail) - 1
        if _word_char(tail[0]) and found > 0 and _word_char(prefix[found - 1]):
            continue
        rest = found + len(tail)
        yield prefix[rest : prefix.index("\n", rest)].rstrip()


def _pieces(line: str) -> list[str]:
    """`line` as its tokens, each with the spaces before it."""
    pieces, end = [], 0
    for match in TOKEN.finditer(line):
        pieces.append(line[end : match.end()])
        end = match.end()
    return pieces


def _common_start(lines: list[str], most: int) -> str:
    """The tokens (at most `most`) that every line starts with."""
    common = _pieces(lines[0])[:most]
    for line in lines[1:]:
        pieces = _pieces(line)
        length = next(
            (at for at, (a, b) in enumerate(zip(common, pieces, strict=False)) if a != b), min(len(common), len(pieces))
        )
        common = common[:length]
    return "".join(common)


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


# Drafts accepted whole / drafts offered, per kind, at the places diffusion_infill.bench.replay asks on its
# tuning excerpts (12 of 500 characters): `python -m diffusion_infill.bench.calibrate --drafts` counts them.
# Not after a word, the last tokens are mostly `):` or indentation, which end lines that
# differ; several earlier places that agree are nearly always right.
TUNED_COUNTS = {"not after a word": (0, 14), "one place": (51, 87), "several places": (28, 31)}


def kind(draft: DocumentDraft, prefix: str) -> str:
    if not prefix or not _word_char(prefix[-1]):
        return "not after a word"
    return "one place" if draft.places == 1 else "several places"


def estimate(draft: DocumentDraft, prefix: str) -> float:
    """The chance that `draft` is accepted whole, from its kind's rate on the tuning excerpts
    (one more accepted and one more rejected than counted: no kind is certain)."""
    accepted, drafts = TUNED_COUNTS[kind(draft, prefix)]
    return (accepted + 1) / (drafts + 2)


# Characters around the cursor that a draft's closure check parses. The server asks at every keystroke,
# on its event loop: the whole window (40,000 characters) took 30-66 ms to parse there, this 2-10 ms.
# A cut mid-line or mid-string is no problem: the check asks only that the draft makes the text no worse.
CHECK_BEFORE, CHECK_AFTER = 4_096, 1_024


def offer(request: InfillRequest) -> DocumentDraft | None:
    """The draft for `request` when one fits there: a draft is a rest of a line, so the cursor ends
    its line or only auto-paired closers follow it (see the module's doc); and inserting it keeps
    closure, as every completion does."""
    closers = auto_paired_closers(request.suffix, 0)
    if request.suffix.split("\n", 1)[0].strip() and not closers:
        return None
    draft = document_draft(request.prefix)
    if draft is not None and closers:
        draft = _before_closers(draft, closers)
    if draft is None:
        return None
    before, after = request.prefix[-CHECK_BEFORE:], request.suffix[:CHECK_AFTER]
    return draft if syntax_check.check(before, draft.text, after, request.language).valid else None


def _before_closers(draft: DocumentDraft, closers: str) -> DocumentDraft | None:
    """`draft` before the editor's `closers`: as it is when it holds no closer (it stops inside the
    brackets, MAX_DRAFT_TOKENS from the cursor, and cannot repeat one), else without the `closers` it
    ends with; None when it does not end with them or is nothing but them (the editor's closers would
    then stand where the draft has code, or the draft adds nothing)."""
    if not AUTO_PAIR_CLOSERS & set(draft.text):
        return draft
    text = draft.text.removesuffix(closers)
    if text == draft.text or not text.strip():
        return None
    return replace(draft, text=text)
