"""The rules: each Problem in a text, and the outline and code blocks a fix must keep."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from diffusion_infill.engine.repair.markdown_rules.lines import (
    _BULLET,
    _HEADING,
    _HORIZONTAL_RULE,
    _blank,
    _Line,
    _lines,
    _list_marker,
    _opening,
)
from diffusion_infill.engine.repair.markdown_rules.tables import _Table, _tables

_ESCAPED = re.compile(r"\\.")


_BACKTICK_RUN = re.compile(r"`+")
_EMPHASIS = re.compile(r"\*\*|__|\*")
_MARKS = re.compile(r"[*`]|__")
_WORD = re.compile(r"\w+")
_NOT_OPENING = frozenset(",.;:!?)]}")
SWALLOWED = "code fence is never closed before the next one opens"  # the problem `_swallowed` finds


@dataclass(frozen=True)
class Problem:
    rule: str  # "table", "fence", "fence-blank", "fence-language", "emphasis" or "list"
    start: int  # character offsets of what the problem covers
    end: int
    message: str


def _code_spans(text: str) -> tuple[str, int | None]:
    """`text` with its code spans written over (they may span lines), and the offset of the first
    backtick run no run of its length closes, if any."""
    chars, runs = (
        list(text),
        [match for match in _BACKTICK_RUN.finditer(text) if match.start() == 0 or text[match.start() - 1] != "\\"],
    )
    index = 0
    while index < len(runs):
        run = runs[index]
        closing = next((later for later in range(index + 1, len(runs)) if runs[later].group() == run.group()), None)
        if closing is None:
            return "".join(chars), run.start()
        chars[run.start() : runs[closing].end()] = "x" * (runs[closing].end() - run.start())  # a word, as text
        index = closing + 1
    return "".join(chars), None


def _flanking(text: str, start: int, end: int) -> tuple[bool, bool]:
    """(opens, closes) for the emphasis marker at text[start:end], by what is around it: it opens
    before a word (`*word`), closes after one (`word*`); inside a word it is literal, and
    between punctuation marks (`?*]`) it can only close. Before a comma or a closing mark
    (`(a, *, b)`) no one writes emphasis: literal."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    if before.isspace() or after.isspace():
        return not after.isspace() and after not in _NOT_OPENING, not before.isspace()
    if before.isalnum() and after.isalnum():
        return False, False
    return after.isalnum(), not after.isalnum()


def _unclosed_markers(text: str) -> list[tuple[int, str]]:
    """(offset, marker) of the emphasis markers in `text` no closer matches, in order."""
    open_markers: list[tuple[int, str]] = []
    where: dict[str, list[int]] = {"**": [], "__": [], "*": []}  # each marker's places in open_markers
    for match in _EMPHASIS.finditer(text):
        opens, closes = _flanking(text, match.start(), match.end())
        marker = match.group()
        if closes and where[marker]:
            last = where[marker][-1]  # it closes the last one opened, and what was opened after it
            for _, item in open_markers[last:]:
                where[item].pop()
            del open_markers[last:]
        elif opens:
            where[marker].append(len(open_markers))
            open_markers.append((match.start(), marker))
    return open_markers


def _paragraphs(lines: list[_Line], table_rows: set[int]) -> Iterator[list[_Line]]:
    """Runs of prose lines that CommonMark reads as one inline context: no code, table row,
    heading or blank line inside; a list item starts a new one; lines indented four spaces or
    more (perhaps code) are left out."""
    group: list[_Line] = []
    for line in lines:
        prose = not (line.in_code or line.start in table_rows or _blank(line.text))
        if not prose or _HEADING.match(line.text) or _list_marker(line.text) or _HORIZONTAL_RULE.match(line.text):
            if group:
                yield group
            group = []
            if prose and not _HORIZONTAL_RULE.match(line.text):
                if _HEADING.match(line.text):
                    yield [line]
                else:
                    group = [line]
            continue
        group.append(line)
    if group:
        yield group


def _unbalanced_in(group: list[_Line]) -> dict[int, list[str]]:
    """Closers each line of a paragraph lacks, by the line's offset, in the order they must be appended."""
    text = "\n".join(line.text for line in group)
    if not _MARKS.search(text):
        return {}  # no emphasis marker and no backtick: nothing to close
    blanked = "\n".join(_BULLET.sub(lambda match: " " * len(match.group()), row) for row in text.split("\n"))
    code_free, unclosed_code = _code_spans(blanked)  # before escapes: a backslash in a code span is text
    code_free = _ESCAPED.sub("  ", code_free)
    missing: dict[int, list[str]] = {}
    starts = [0]
    for line in group[:-1]:
        starts.append(starts[-1] + len(line.text) + 1)

    def line_of(offset: int) -> _Line:
        return group[bisect_right(starts, offset) - 1]

    if unclosed_code is not None:
        run = _BACKTICK_RUN.match(blanked, unclosed_code).group()
        line_end = blanked.find("\n", unclosed_code)
        rest = blanked[unclosed_code + len(run) : len(blanked) if line_end == -1 else line_end]
        if not _WORD.search(rest):
            unclosed_code = None  # no word after it on its line (`default ``)`): literal backticks, nothing to close
    if unclosed_code is not None:  # an unclosed code span swallows the rest of its line
        line = line_of(unclosed_code)
        missing[line.start] = [run]
        line_end = starts[group.index(line)] + len(line.text)
        code_free = code_free[:unclosed_code] + " " * (line_end - unclosed_code) + code_free[line_end:]
    for offset, marker in _unclosed_markers(code_free):
        missing.setdefault(line_of(offset).start, []).insert(0, marker)
    return missing


def _list_problems(lines: list[_Line]) -> list[tuple[_Line, str, str]]:
    """(line, marker found, marker wanted) for items whose marker differs from their list's first item."""
    wrong: list[tuple[_Line, str, str]] = []
    first: dict[int, str] = {}  # indent -> marker of the first item at that indent
    for line in lines:
        if not line.text.strip():
            continue  # a blank line does not end a list
        if line.in_code:
            first = {}
            continue
        item = _list_marker(line.text)
        if item is None:
            if not line.text.startswith((" ", "\t")):
                first = {}  # a paragraph ends the list
            continue
        indent, kind, _ = item
        first = {level: marker for level, marker in first.items() if level <= indent}
        wanted = first.setdefault(indent, kind)
        if (wanted in ".)") != (kind in ".)"):
            first[indent] = kind  # a bullet list after an ordered one (or back) is another list
        elif wanted != kind:
            wrong.append((line, kind, wanted))
    return wrong


def _fence_blanks(lines: list[_Line]) -> list[tuple[_Line, str]]:
    """(fence line, "before" or "after") for fences without the blank line MD031 asks for."""
    missing = []
    for index, line in enumerate(lines):
        if line.fence == "open" and index > 0 and not _blank(lines[index - 1].text):
            missing.append((line, "before"))
        last = index == len(lines) - 1 or (index == len(lines) - 2 and lines[-1].text == "")
        if line.fence == "close" and not last and not _blank(lines[index + 1].text):
            missing.append((line, "after"))
    return missing


def _unlabelled(lines: list[_Line]) -> list[_Line]:
    """Opening fences with no language (MD040)."""
    return [line for line in lines if line.fence == "open" and not line.text[_opening(line.text).end() :].strip()]


@dataclass(frozen=True)
class Reading:
    """A text read once: its lines and what each rule finds in them, each found once for the problems
    and for the fix that follows them (a 2 MB text's lines take a second to read)."""

    text: str
    lines: list[_Line]

    @cached_property
    def tables(self) -> list[_Table]:
        return _tables(self.lines)

    @cached_property
    def open_fence(self) -> _Line | None:
        return _open_fence(self.lines)

    @cached_property
    def swallowed(self) -> list[tuple[_Line, _Line]]:
        return _swallowed(self.lines)

    @cached_property
    def ended_by_container(self) -> list[tuple[_Line, _Line]]:
        return _ended_by_container(self.lines)

    @cached_property
    def fence_blanks(self) -> list[tuple[_Line, str]]:
        return _fence_blanks(self.lines)

    @cached_property
    def unlabelled(self) -> list[_Line]:
        return _unlabelled(self.lines)

    @cached_property
    def unbalanced(self) -> list[tuple[_Line, list[str]]]:
        return list(_unbalanced_lines(self.lines, self.tables))

    @cached_property
    def list_problems(self) -> list[tuple[_Line, str, str]]:
        return _list_problems(self.lines)

    @cached_property
    def problems(self) -> list[Problem]:
        """Every rule broken in the text, in text order."""
        return _problems(self)


def read(text: str, unchanged: Reading | None = None, at: int = 0) -> Reading:
    """`text` read. `unchanged`: a reading of a text the same as `text` up to its line `at`, which opens a
    fence: the lines before it serve again."""
    return Reading(text, _lines(text) if unchanged is None else _lines(text, unchanged.lines, at))


def problems(text: str) -> list[Problem]:
    """Every rule broken in `text`, in text order."""
    return read(text).problems


def _problems(reading: Reading) -> list[Problem]:
    found = []
    for table in reading.tables:
        width = table.width
        for count in table.counts:
            if count != width:
                found.append(
                    Problem(
                        "table",
                        table.rows[0].start,
                        table.rows[-1].start + len(table.rows[-1].text),
                        f"table row has {count} cells, the table has {width} columns",
                    )
                )
                break
    opened = reading.open_fence
    if opened is not None:
        found.append(Problem("fence", opened.start, len(reading.text), "code fence is never closed"))
    for opening, inner in reading.swallowed:
        found.append(
            Problem(
                "fence",
                opening.start,
                inner.start + len(inner.text),
                SWALLOWED,
            )
        )
    for opening, last in reading.ended_by_container:
        found.append(
            Problem(
                "fence",
                opening.start,
                last.start + len(last.text),
                "code fence is never closed before its block quote or list item ends",
            )
        )
    for line, side in reading.fence_blanks:
        found.append(
            Problem("fence-blank", line.start, line.start + len(line.text), f"code fence needs a blank line {side} it")
        )
    for line in reading.unlabelled:
        found.append(
            Problem("fence-language", line.start, line.start + len(line.text), "code fence does not name its language")
        )
    for line, missing in reading.unbalanced:
        found.append(
            Problem(
                "emphasis", line.start, line.start + len(line.text), f"unclosed {' and '.join(missing)} on this line"
            )
        )
    for line, kind, wanted in reading.list_problems:
        found.append(
            Problem(
                "list",
                line.start,
                line.start + len(line.text),
                f"list marker {kind!r} differs from this list's {wanted!r}",
            )
        )
    return sorted(found, key=lambda problem: (problem.start, problem.rule))


def _swallowed(lines: list[_Line]) -> list[tuple[_Line, _Line]]:
    """(opening line, inner line) of each fence that holds a line opening a fence of its own kind with a
    language (`` ```bash ``): such a line cannot close it, so the fence before it was never closed and the
    closing line of the next one closed it instead."""
    found, opening, content = [], None, False
    for line in lines:
        if line.fence == "open":
            opening, content = line, False
        elif line.fence == "close" or line.closes_at:
            opening = None
        elif opening is not None:
            # as the fence's first line it is content: a fence showing a fenced example (``` then ```js)
            if content and _opens_like(opening, line):
                found.append((opening, line))
                opening = None  # one inner line names the fence; the lines after it cannot close it either
            content = content or bool(line.text.strip())
    return found


def _opens_like(opening: _Line, line: _Line) -> bool:
    """Whether `line` would open a fence like `opening` (same marker, as long or longer, same indent), with a
    language."""
    outer, inner = _opening(opening.text), _opening(line.text)
    return (
        inner is not None
        and inner.group(1) == outer.group(1)
        and inner.group(2)[0] == outer.group(2)[0]
        and len(inner.group(2)) >= len(outer.group(2))
        and bool(line.text[inner.end() :].strip())
    )


def _open_fence(lines: list[_Line]) -> _Line | None:
    """The fence still open where the text ends."""
    fence_line = None
    for line in lines:
        if line.fence == "open":
            fence_line = line
        if line.fence == "close" or line.closes_at:
            fence_line = None
    return fence_line


def _ended_by_container(lines: list[_Line]) -> list[tuple[_Line, _Line]]:
    """(opening line, last line) of each fence the block quote or list item it was opened in ended."""
    ended, opening = [], None
    for line in lines:
        if line.fence == "open":
            opening = line
        if line.closes_at:
            ended.append((opening, line))
    return ended


@dataclass(frozen=True)
class Outline:
    """The structure a fix must keep: a candidate that passes the rules by dissolving a table
    (or a fence, or a list) into prose has not fixed it."""

    table_rows: tuple[int, ...]  # rows of each table, in order
    fences: int  # fence lines
    list_items: int


def outline(text: str) -> Outline:
    lines = _lines(text)
    return Outline(
        tuple(len(table.rows) for table in _tables(lines)),
        sum(1 for line in lines if line.fence),
        sum(1 for line in lines if not line.in_code and _list_marker(line.text)),
    )


def fence_languages(text: str) -> list[str]:
    """The info string of each opening fence, in order."""
    return [line.text[_opening(line.text).end() :].strip() for line in _lines(text) if line.fence == "open"]


def code_blocks(text: str) -> list[str]:
    """The content of each code block (fenced, indented, or raw HTML), fence lines and trailing blank
    lines left out: what no fix may change."""
    blocks: list[list[str]] = []
    previous_code = False
    for line in _lines(text):
        if line.fence == "open" or (line.in_code and not previous_code):
            blocks.append([])
        if line.in_code and not line.fence:
            blocks[-1].append(line.text)
        previous_code = line.in_code and line.fence != "close" and not line.closes_at
    return [text for text in ("\n".join(block).rstrip() for block in blocks) if text]


def model_changes(original: str, deterministic: str, candidate: str) -> Counter:
    """What a model's candidate changed that a fix may not: words `original` lacks, a fence language
    other than the deterministic fix's (the model never names one), a code block's content."""
    changes = Counter(_WORD.findall(candidate)) - Counter(_WORD.findall(original))
    if fence_languages(candidate) != fence_languages(deterministic):
        changes["(a fence language)"] += 1
    if code_blocks(candidate) != code_blocks(original):
        changes["(a code block)"] += 1
    return changes


def _unbalanced_lines(lines: list[_Line], tables: list[_Table]) -> Iterator[tuple[_Line, list[str]]]:
    """Prose lines (not code, not table rows of `tables`) with unclosed emphasis or inline code, and what
    is missing."""
    table_rows = {row.start for table in tables for row in table.rows}
    by_start = {line.start: line for line in lines}
    for group in _paragraphs(lines, table_rows):
        for start, missing in sorted(_unbalanced_in(group).items()):
            yield by_start[start], missing
