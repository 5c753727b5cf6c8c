"""The deterministic fix of every rule, round by round until nothing is broken."""

from __future__ import annotations

import json
import re
from itertools import islice

from diffusion_infill.engine.repair.markdown_rules.lines import (
    _FENCE,
    _HEADING,
    _QUOTE_PREFIX,
    _blank,
    _closes,
    _closing_prefix,
    _html_start,
    _indent,
    _inner,
    _Line,
    _list_marker,
    _opening,
)
from diffusion_infill.engine.repair.markdown_rules.rules import Problem, Reading, read
from diffusion_infill.engine.repair.markdown_rules.tables import _padded_rows

_SHELL = re.compile(
    r"^\s*(\$ |(pip|pip3|npm|npx|git|cd|python|python3|uv|make|curl|docker|export|conda|brew|apt|"
    r"apt-get|sudo|pytest|nvim|code)\b)"
)


# Plain prose, not code: a capital, four words or more without code's punctuation, a sentence's end.
_PROSE_LINE = re.compile(r"[A-Z][\w'’,-]*(?: [^\s=;{}<>$\\|#]+){3,}[.:!?]")


FIX_ROUNDS = 3  # closing a code span can reveal emphasis it hid; a few rounds settle it
MAX_REFENCED = 50  # rounds that only close a fence swallowing the next one's opening line


def fix(text: str) -> str:
    """`text` with every rule's deterministic fix applied; unchanged when nothing is broken. A text whose
    every line ends in CRLF is fixed with CRLF line endings, the lines a fix adds included."""
    return fixed(text)[0]


def fixed(text: str, reading: Reading | None = None) -> tuple[str, list[Problem] | None]:
    """`fix(text)`, and the problems left in it (None for a CRLF text: they were found in its LF form).
    `reading`: `read(text)`, when the caller has it already (a reading of the whole text saved). Each
    round fixes from the reading its problems were found in: one reading of the text a round."""
    if "\r\n" in text and text.count("\n") == text.count("\r\n"):
        return fix(text.replace("\r\n", "\n")).replace("\n", "\r\n"), None
    rounds = refenced = 0
    reading = read(text) if reading is None else reading
    # a text with fences that swallow the next one's opening line is not checked for other problems: they
    # are fixed once those fences are closed (a chain of them takes a round each, up to MAX_REFENCED)
    while rounds < FIX_ROUNDS and refenced < MAX_REFENCED and (reading.swallowed or reading.problems):
        if reading.swallowed:
            text, closed, first = _refenced(reading, MAX_REFENCED - refenced)
            refenced += closed
            reading = read(text, reading, first)  # read again from the first fence closed
        else:
            text = _fix_once(reading)
            rounds += 1
            reading = read(text)
    return text, reading.problems


def _refenced(reading: Reading, limit: int) -> tuple[str, int, int]:
    """The text with fences that swallow the next one's opening line closed, how many, and the line the
    first of them opens on (the lines before it stay as they were). The first, then each next one while
    closing the one before changed nothing past the line that closed it (a fence at the top level, no
    other fence or HTML line from its code's end to that line, which closes the opening it swallowed
    too): the text rounds closing one fence each and reading the whole text anew would write, in one
    reading. Every other fix waits for the next round (the fences pair up anew)."""
    lines = reading.lines
    index_of = {line.start: index for index, line in enumerate(lines)}
    closers: dict[int, str] = {}  # line index -> the closing fence to write after it
    for opening, inner in reading.swallowed:
        start, stop = index_of[opening.start], index_of[inner.start]
        end = _code_end(lines, start, stop)
        match = _opening(opening.text)
        closers[end] = _closing_prefix(match) + match.group(2)
        if len(closers) == limit or not _closing_changes_nothing_after(lines, end, stop, match.group(1)):
            break
    out = "\n".join(line.text + ("\n" + closers[index] if index in closers else "") for index, line in enumerate(lines))
    return out, len(closers), index_of[reading.swallowed[0][0].start]


def _closing_changes_nothing_after(lines: list[_Line], end: int, inner: int, prefix: str) -> bool:
    """Whether a fence closed after line `end` (with `prefix` before it) reads the lines after the one that
    closed it before as before: at the top level, with no fence or HTML line from `end` to that one but
    the `inner` opening it swallowed, which that line closes too."""
    if prefix:
        return False  # in a list item or a block quote, the lines read anew may end items or quotes
    close = inner + 1
    while close < len(lines) and lines[close].fence != "close":
        close += 1
    between = [line.text for line in lines[end + 1 : close] if line is not lines[inner]]
    return (
        close < len(lines)
        and _closes(_opening(lines[inner].text).group(2), lines[close].text)
        and not any(_FENCE.match(line) or _html_start(line, True) is not None for line in between)
    )


def _language(lines: list[_Line], opening: int) -> str:
    """A language for the unlabelled fence on line `opening`, from its content: json, sh or text."""
    body = []
    for line in islice(lines, opening + 1, None):
        if line.fence == "close":
            break
        body.append(line.text[_QUOTE_PREFIX.match(line.text).end() :])
        if line.closes_at:
            break
    content = "\n".join(body).strip()
    try:
        json.loads(content)
        return "json" if content[:1] in "{[" else "text"
    except json.JSONDecodeError:
        pass
    return "sh" if content and all(_SHELL.match(row) for row in content.split("\n") if row.strip()) else "text"


def _fix_once(reading: Reading) -> str:
    """The text read with one round of fixes (no fence swallows another's opening line: `_refenced` closed
    them)."""
    text, lines = reading.text, reading.lines
    index_of = {line.start: index for index, line in enumerate(lines)}
    replaced = _padded_rows(reading.tables)
    for line, missing in reading.unbalanced:
        body = line.text.rstrip()
        replaced[line.start] = body + "".join(reversed(missing)) + line.text[len(body) :]
    for line, kind, wanted in reading.list_problems:
        current = replaced.get(line.start, line.text)
        _, _, match = _list_marker(current)
        marker_at = match.end(1) + (len(match.group(2)) if kind in ".)" else 0)
        replaced[line.start] = current[:marker_at] + wanted + current[marker_at + 1 :]
    for line in reading.unlabelled:
        replaced[line.start] = line.text.rstrip() + _language(lines, index_of[line.start])
    reindented = set()
    for _, last in reading.ended_by_container:
        after = _dedented_closer(lines, index_of[last.start])
        if after is not None:  # the closing fence, written left of the item's indent: moved into the item
            replaced[after.start] = last.closes_at
            reindented.add(after.start)
        else:
            replaced[last.start] = replaced.get(last.start, last.text) + "\n" + last.closes_at
    blank_after = {}  # line index -> the blank line to insert after it; one between two fences
    for line, side in reading.fence_blanks:
        if line.start in reindented:
            continue  # a closing fence now, in the item: no blank line goes before it
        index = index_of[line.start] - (side == "before")
        blank_after[index] = _QUOTE_PREFIX.match(line.text).group().rstrip()
    for index, blank in blank_after.items():
        line = lines[index]
        replaced[line.start] = replaced.get(line.start, line.text) + "\n" + blank
    opened = reading.open_fence
    at_end = ""  # the closing fence to append, for a fence whose code runs to the end
    if opened is not None and opened.start not in reindented:
        match = _opening(opened.text)
        closer, end = _closing_prefix(match) + match.group(2), _code_end(lines, index_of[opened.start])
        if end is None:
            at_end = closer
        else:
            replaced[lines[end].start] = replaced.get(lines[end].start, lines[end].text) + "\n" + closer
    out = "\n".join(replaced.get(line.start, line.text) for line in lines)
    if at_end:
        out += ("" if out.endswith("\n") else "\n") + at_end + ("\n" if text.endswith("\n") else "")
    return out


def _dedented_closer(lines: list[_Line], last_index: int) -> _Line | None:
    """The line that ended the list item or block quote a fence was open in (its last line is line
    `last_index`), when it is that fence's closing line written with less indentation (then it opens a
    new fence): None otherwise."""
    last, index = lines[last_index], last_index + 1
    while index < len(lines) and lines[index].in_code and not lines[index].fence and _blank(lines[index].text):
        index += 1
    if index == len(lines) or lines[index].fence != "open":
        return None
    following = lines[index]
    marker = _FENCE.match(last.closes_at).group(2)
    return following if _closes(marker, following.text) else None


def _code_end(lines: list[_Line], start: int, stop: int | None = None) -> int | None:
    """Index of the last line of the code of the unclosed fence on line `start`: the last line that is
    not blank before a heading or, after a blank line, a line of plain prose at the fence's own indent,
    or before line `stop`; None when the code runs to the end of the text."""
    indent = _indent(_inner(lines[start].text))
    last = start
    for index in range(start + 1, len(lines) if stop is None else stop):
        line = _inner(lines[index].text)
        if not line.strip():
            continue
        previous_blank = not _inner(lines[index - 1].text).strip()
        following = _inner(lines[index + 1].text) if index + 1 < len(lines) else ""
        if _indent(line) <= indent and (
            _ends_code_as_heading(line, previous_blank, not following.strip())
            or (previous_blank and _PROSE_LINE.fullmatch(line.strip()))
        ):
            return last
        last = index
    return None if stop is None else last


def _ends_code_as_heading(line: str, blank_before: bool, blank_after: bool) -> bool:
    """A heading after code (`## Usage`); a lone `#` is often a shell or Python comment, so it counts
    only with blank lines on both sides."""
    match = _HEADING.match(line)
    if match is None:
        return False
    level = len(line.lstrip(" ")) - len(line.lstrip(" ").lstrip("#"))
    return (blank_before and blank_after) if level == 1 else (blank_before or blank_after)
