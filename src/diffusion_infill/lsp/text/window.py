"""The text around the cursor that a completion request gives the engine: bounded, so a
10 MB file costs what a small one does.

The model reads far less than this (a checkpoint's `max_prefix` tokens, about 1,000
characters for the embedded model, and a few tokens after the cursor); the rest is for
the closure check, which parses what it is given on every candidate, and keeps the last
32 parses (diffusion_infill.engine.syntax_check): on a whole 10 MB file that is seconds per check and hundreds
of megabytes. A window that starts inside a string or comment is no problem for the
check, which only asks that a candidate makes the window no worse than it was.

A line is bounded too: of a line the window cuts (a minified file's one line, the cursor's own
line when it is long), it keeps at most MAX_LINE characters on either side of the cursor. A
window cut inside a line has no structure to offer the check beyond its last few kilobytes, and
a 32 KB window of one JSON line parses to hundreds of errors that every candidate is compared
against: a completion at the end of a 3 MB line costs what one in a small file does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from diffusion_infill.lsp.text.rope import Rope

MAX_BEFORE = 32_768  # characters before the cursor
MAX_AFTER = 8_192  # characters after it
MAX_LINE = 2_048  # characters of a line the window cuts, on either side of the cursor


def bounded(
    prefix: str, suffix: str, max_before: int = MAX_BEFORE, max_after: int = MAX_AFTER, max_line: int = MAX_LINE
) -> tuple[str, str]:
    """The end of `prefix` and the start of `suffix`, cut at line boundaries where there is one, and
    at `max_line` characters from the cursor where the cut falls inside a line."""
    return prefix[_prefix_start(prefix, max_before, max_line) :], suffix[: _suffix_end(suffix, max_after, max_line)]


def _prefix_start(prefix: str, max_before: int, max_line: int) -> int:
    end, line = len(prefix), min(max_line, max_before)
    if end > line and prefix.rfind("\n", end - line - 1) == -1:  # the cursor's line is longer: cut inside it
        return end - line
    if end <= max_before:
        return 0
    newline = prefix.find("\n", end - max_before, end - 1)  # never the last character: that leaves nothing
    return newline + 1 if newline != -1 else end - line


def _suffix_end(suffix: str, max_after: int, max_line: int) -> int:
    line = min(max_line, max_after)
    if len(suffix) > line and suffix.find("\n", 0, line) == -1:  # the rest of the line is longer: cut inside it
        return line
    if len(suffix) <= max_after:
        return len(suffix)
    newline = suffix.rfind("\n", 1, max_after)
    return newline + 1 if newline != -1 else line


def around(text: str | Rope, start: int, end: int, lead: str = "", max_line: int = MAX_LINE) -> tuple[str, str]:
    """`bounded(text[:start] + lead, text[end:])`, slicing only the window's worth of `text`: one
    character more than the window on each side, so `bounded` cuts where it would in the whole text."""
    before, after = text[max(0, start - MAX_BEFORE - 1) : start] + lead, text[end : end + MAX_AFTER + 1]
    return bounded(before, after, max_line=max_line)


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class ModelText:
    """The window as the model reads it, with LF line ends (it was trained on LF text: a "\r" is a
    token it never saw), and the document's own line end, which a completion is written back with."""

    prefix: str
    suffix: str
    line_end: str  # "\r\n", "\r" or "\n": the window's first line break; "\n" when it has none

    @classmethod
    def of(cls, prefix: str, suffix: str) -> ModelText:
        found = _LINE_BREAK.search(prefix) or _LINE_BREAK.search(suffix)
        return cls(_LINE_BREAK.sub("\n", prefix), _LINE_BREAK.sub("\n", suffix), found.group() if found else "\n")

    def to_document(self, completion: str) -> str:
        """`completion` (the model's, LF) with the document's line ends."""
        return completion if self.line_end == "\n" else completion.replace("\n", self.line_end)


class Tails:
    """What the model reads of each other open document (the window's worth before its end, LF line ends),
    kept for the text it was sliced from: sliced once a version, not at every keystroke in another document."""

    def __init__(self):
        self._kept: dict[str, tuple[Rope, str]] = {}  # uri -> (the text it was sliced from, the tail)

    def of(self, uri: str, text: Rope) -> str:
        kept = self._kept.get(uri)
        if kept is None or kept[0] is not text:  # an edit makes a new Rope: the tail of the old is stale
            kept = (text, ModelText.of(around(text, len(text), len(text))[0], "").prefix)
            self._kept[uri] = kept
        return kept[1]

    def forget(self, uri: str) -> None:
        self._kept.pop(uri, None)
