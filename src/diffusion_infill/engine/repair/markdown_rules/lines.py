"""Markdown lines as CommonMark reads them for the rules: which are code (fenced, indented, HTML
blocks), which open or close a fence, where a fence's block quote or list item ends it."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

# A fence line: any indentation (list items indent theirs), inside any block quote prefix.
_FENCE = re.compile(r"^((?:[ \t]*>)*[ \t]*)(`{3,}|~{3,})")
# An opening fence may start a list item, on its marker's line (`- ```js`, `1. ~~~`).
_ITEM_FENCE = re.compile(r"^((?:[ \t]*>)*[ \t]*(?:(?:[-*+]|\d{1,9}[.)])[ \t]{1,4})+)(`{3,}|~{3,})")
_QUOTE_PREFIX = re.compile(r"^(?:[ \t]*>)*")
_HEADING = re.compile(r"^ {0,3}#{1,6}(\s|$)")
# The start of an HTML block, as CommonMark reads it: kinds 1-5 (raw text tags, comments,
# processing instructions, declarations, CDATA) end at their own closer; kind 6 (block-level
# tags), and kind 7 (any tag alone on its line, only after a blank line), at a blank line.
_HTML_CLOSED_BY = (
    (re.compile(r"^ {0,3}<(script|pre|style|textarea)(\s|>|$)", re.IGNORECASE), None),
    (re.compile(r"^ {0,3}<!--"), "-->"),
    (re.compile(r"^ {0,3}<\?"), "?>"),
    (re.compile(r"^ {0,3}<![A-Za-z]"), ">"),
    (re.compile(r"^ {0,3}<!\[CDATA\["), "]]>"),
)
_HTML_BLOCK = re.compile(
    r"^ {0,3}</?(?:address|article|aside|blockquote|body|center|details|dialog|dd|div|dl|dt|figcaption|figure|"
    r"footer|form|h[1-6]|header|hr|li|main|nav|ol|p|picture|section|source|summary|table|tbody|td|tfoot|th|thead|"
    r"tr|ul)(?:\s|/?>|$)",
    re.IGNORECASE,
)
_HTML_TAG_LINE = re.compile(r"^ {0,3}</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>\s*$")


_BULLET = re.compile(r"^(\s*)([-*+])(\s+)(?=\S)")
_ORDERED = re.compile(r"^(\s*)(\d{1,9})([.)])(\s+)(?=\S)")


_HORIZONTAL_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")


@dataclass(frozen=True)
class _Before:
    """What the reader knew before a line that opens a fence (no fence or HTML block was open): a text
    the same up to that line can be read again from there."""

    previous_blank: bool
    items: tuple[int, ...]  # content indents of the list items open
    depth: int  # block quotes


@dataclass(slots=True)  # not frozen: a frozen one takes 4 times as long to make, and 2 MB is 78,000 lines
class _Line:
    start: int  # offset of the line's first character
    text: str  # without its line break
    in_code: bool  # inside a fenced or indented code block (or an HTML block), fences included
    fence: str = ""  # "open" or "close" for a fence line
    closes_at: str = ""  # the last line of a fence its container (quote, list item) ended: the closing line it lacks
    before: _Before | None = None  # for a fence's opening line


@dataclass
class _Reading:
    """A fence being read: where it was opened, so that it ends with its container."""

    marker: str  # the fence's backticks or tildes
    depth: int  # block quotes it is inside
    indent: int  # content indent of the list item it is inside (0: none)
    prefix: str  # what precedes the fence on its opening line: quote markers, indentation
    last: int  # index of its last line that is not blank


def _depth(line: str) -> int:
    if ">" not in line:
        return 0  # most lines are in no block quote: no match to run
    return _QUOTE_PREFIX.match(line).group().count(">")


def _inner(line: str) -> str:
    """The line inside its block quotes (the one space after the last `>` belongs to the marker)."""
    if ">" not in line:
        return line
    prefix = _QUOTE_PREFIX.match(line).end()
    inner = line[prefix:]
    return inner[1:] if prefix and inner.startswith(" ") else inner


def _indent(line: str) -> int:
    """Columns of indentation (a tab reaches the next multiple of 4)."""
    spaced = line.lstrip(" ")
    if not spaced.startswith("\t"):
        return len(line) - len(spaced)  # spaces alone: one column each, counted in C
    column = 0
    for char in line:
        if char == " ":
            column += 1
        elif char == "\t":
            column += 4 - column % 4
        else:
            break
    return column


def _content_indent(item: str) -> int:
    """Where the content of a list item line starts."""
    _, kind, match = _list_marker(item)
    spaces = len(match.group(match.lastindex))
    return match.end() - spaces + (1 if spaces > 4 else spaces)


def _opening(line: str) -> re.Match | None:
    """The fence a line opens, if it opens one (after a list item's marker too): a backtick fence's
    info string has no backtick (```` ```x``` ```` is inline code)."""
    if "```" not in line and "~~~" not in line:
        return None  # no fence's marker anywhere: most lines are ruled out at once
    match = _FENCE.match(line) or _ITEM_FENCE.match(line)
    if match and match.group(2)[0] == "`" and "`" in line[match.end() :]:
        return None
    return match


def _closing_prefix(opening: re.Match) -> str:
    """What goes before a closing line written for the fence `opening` matched: its block quote
    markers and indentation, a list item's marker as spaces (the closing line stays in the item)."""
    prefix = opening.group(1)
    quotes = _QUOTE_PREFIX.match(prefix).end()
    return prefix[:quotes] + re.sub(r"[^\t]", " ", prefix[quotes:])


def _closes(fence: str, line: str) -> bool:
    """Whether a line closes the open `fence`: same character, at least as long, nothing after."""
    if fence[:3] not in line:
        return False  # most lines of code hold no fence's marker
    match = _FENCE.match(line)
    return (
        match is not None
        and match.group(2)[0] == fence[0]
        and len(match.group(2)) >= len(fence)
        and not line[match.end() :].strip()
    )


def _lines(text: str, unchanged: list[_Line] | None = None, at: int = 0) -> list[_Line]:
    """The lines, each marked when it is code, as CommonMark reads them: in a fence (which ends at
    its closing line or where the block quote or list item it was opened in ends), in an
    indented code block (four columns past the list item's content, after a blank line), or
    in an HTML block (which runs to a blank line and swallows fences written inside it).
    `unchanged`: the lines of a text the same as `text` up to its line `at`, which opens a fence: those
    before it serve again, and the reading starts there."""
    lines: list[_Line] = []
    offset, reading, html, previous_blank, items, depth = 0, None, None, True, [], 0
    if unchanged is not None:
        lines, offset, before = unchanged[:at], unchanged[at].start, unchanged[at].before
        previous_blank, items, depth = before.previous_blank, list(before.items), before.depth
    for raw in text[offset:].split("\n"):
        top_items, top_depth, before = items, depth, None  # the reader's state before the line
        inner, line_depth = _inner(raw), _depth(raw)
        indent, blank = _indent(inner), not inner.strip()
        if reading is not None and (
            line_depth < reading.depth or (reading.indent and not blank and indent < reading.indent)
        ):
            last = lines[reading.last]
            lines[reading.last] = replace(last, closes_at=reading.prefix + reading.marker)
            reading = None
        if reading is None and html is None:
            html = _html_start(raw, previous_blank)
        if html is not None:
            lines.append(_Line(offset, raw, True))
            offset += len(raw) + 1
            previous_blank = False
            html = None if (html == "" and not raw.strip()) or (html and html in raw) else html
            continue
        kind, code = "", reading is not None
        if reading is not None:
            if _closes(reading.marker, raw):
                reading, kind = None, "close"
            elif not blank:
                reading.last = len(lines)
        else:
            if line_depth != depth:
                items, depth = [], line_depth
            match, marker = _opening(raw), _list_marker(inner)  # each asked once a line
            if not blank and (previous_blank or match or marker):
                items = [item for item in items if indent >= item]  # the line is outside those items
            own = items[-1] if items else 0
            if (
                not blank
                and indent - own >= 4
                and (previous_blank or (lines and lines[-1].in_code and not lines[-1].fence))
            ):
                code = True  # an indented code block
            elif match and indent - own <= 3:
                before = _Before(previous_blank, tuple(top_items), top_depth)
                if match.re is _ITEM_FENCE:  # the fence is the item's first block: its lines are indented as it is
                    items.append(_content_indent(inner))
                    own = items[-1]
                kind, code = "open", True
                reading = _Reading(match.group(2), line_depth, own, _closing_prefix(match), len(lines))
            elif marker:
                items.append(_content_indent(inner))
        previous_blank = blank
        lines.append(_Line(offset, raw, code or kind == "close", kind, before=before))
        offset += len(raw) + 1
    return lines


def _html_start(line: str, after_blank: bool) -> str | None:
    """What ends the HTML block this line starts ("" for a blank line), or None when it starts none."""
    if "<" not in line[:4]:
        return None  # every pattern wants `<` after at most three spaces: most lines are ruled out at once
    for pattern, closer in _HTML_CLOSED_BY:
        if match := pattern.match(line):
            return closer if closer is not None else f"</{match.group(1).lower()}>"
    if _HTML_BLOCK.match(line) or (after_blank and _HTML_TAG_LINE.match(line)):
        return ""
    return None


def _blank(line: str) -> bool:
    """Blank, or blank inside its block quote."""
    if ">" not in line:
        return not line.strip()  # most lines are in no block quote: no match to run
    return not line[_QUOTE_PREFIX.match(line).end() :].strip()


def _list_marker(line: str) -> tuple[int, str, re.Match] | None:
    """(indent, kind, match) of a list item line: kind is the bullet, or "." / ")" for ordered items."""
    first = line.lstrip()[:1]
    if not first or not (first in "-*_+" or first.isdigit()):
        return None  # no rule, bullet or number starts it: most lines are ruled out at once
    if _HORIZONTAL_RULE.match(line):
        return None
    if match := _BULLET.match(line):
        return len(match.group(1)), match.group(2), match
    if match := _ORDERED.match(line):
        return len(match.group(1)), match.group(3), match
    return None
