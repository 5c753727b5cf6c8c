"""Structural rules for Markdown, and the deterministic fix for each.

Rules (each Problem names one, with the span it covers):
- "table": every row of a pipe table (header, delimiter row, body rows) has the same
  number of cells; the fix adds the missing cells and, when a row has more cells than
  the header, widens the header and delimiter row instead of dropping the extra cells;
- "fence": a code fence opened is closed; the fix closes it at the end of the text;
- "emphasis": `**`, `__`, single `*` and inline code backticks are balanced on a line;
  the fix closes them at the end of the line;
- "list": the items of one list use one bullet marker (`-`, `*` or `+`) or one ordered
  delimiter (`.` or `)`); the fix uses the first item's.
Lines are read as CommonMark does for these constructs; content inside code fences is
never checked.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_DELIMITER_CELL = re.compile(r"^\s*:?-{1,}:?\s*$")
_BULLET = re.compile(r"^(\s*)([-*+])(\s+)(?=\S)")
_ORDERED = re.compile(r"^(\s*)(\d{1,9})([.)])(\s+)(?=\S)")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_BACKTICK_RUN = re.compile(r"`+")
_STRONG = re.compile(r"\*\*|__")
_HORIZONTAL_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")


@dataclass(frozen=True)
class Problem:
    rule: str  # "table", "fence", "emphasis" or "list"
    start: int  # character offsets of what the problem covers
    end: int
    message: str


@dataclass(frozen=True)
class _Line:
    start: int  # offset of the line's first character
    text: str  # without its line break
    in_code: bool  # inside a fenced code block, fences included


def _closes(fence: str, match: re.Match, line: str) -> bool:
    """Whether a fence line closes the open `fence`: same character, at least as long, nothing after."""
    marker = match.group(1)
    return marker[0] == fence[0] and len(marker) >= len(fence) and not line[match.end():].strip()


def _lines(text: str) -> list[_Line]:
    lines, offset, fence = [], 0, None
    for raw in text.split("\n"):
        match = _FENCE.match(raw)
        in_code = fence is not None or match is not None
        if match and fence is None:
            fence = match.group(1)
        elif match and _closes(fence, match, raw):
            fence = None
        lines.append(_Line(offset, raw, in_code))
        offset += len(raw) + 1
    return lines


def _cell_spans(row: str) -> list[tuple[int, int]]:
    """Where each cell's text lies in a table row, between its pipes; pipes escaped or
    inside code spans do not split."""
    start, stop = len(row) - len(row.lstrip()), len(row.rstrip())
    if row.startswith("|", start):
        start += 1
    if stop > start and row[stop - 1] == "|" and row[stop - 2 : stop] != "\\|":
        stop -= 1
    spans, cell_start, index, in_code = [], start, start, False
    while index < stop:
        char = row[index]
        if char == "\\" and index + 1 < stop:
            index += 2
            continue
        if char == "`":
            in_code = not in_code
        if char == "|" and not in_code:
            spans.append((cell_start, index))
            cell_start = index + 1
        index += 1
    spans.append((cell_start, stop))
    return spans


def cells(row: str) -> list[str]:
    """The cells of a table row; pipes escaped or inside code spans do not split."""
    return [row[start:end] for start, end in _cell_spans(row)]


def _is_delimiter(row: str) -> bool:
    return "-" in row and all(_DELIMITER_CELL.match(cell) for cell in cells(row))


@dataclass(frozen=True)
class _Table:
    rows: list[_Line]  # header, delimiter, body rows

    @property
    def width(self) -> int:
        return max(len(cells(row.text)) for row in self.rows)


def _tables(lines: list[_Line]) -> list[_Table]:
    tables, index = [], 0
    while index + 1 < len(lines):
        header, delimiter = lines[index], lines[index + 1]
        if not header.in_code and "|" in header.text and not delimiter.in_code and _is_delimiter(delimiter.text):
            end = index + 2
            while end < len(lines) and not lines[end].in_code and "|" in lines[end].text and lines[end].text.strip():
                end += 1
            tables.append(_Table(lines[index:end]))
            index = end
        else:
            index += 1
    return tables


def _row_text(row: str, parts: list[str]) -> str:
    indent = row[: len(row) - len(row.lstrip())]
    return indent + "|" + "|".join(parts) + "|"


def _fixed_table(table: _Table) -> list[str]:
    width, out = table.width, []
    for position, row in enumerate(table.rows):
        parts = cells(row.text)
        if len(parts) == width:
            out.append(row.text)
            continue
        filler = " --- " if position == 1 else "  "
        out.append(_row_text(row.text, parts + [filler] * (width - len(parts))))
    return out


def _strip_code(line: str) -> str:
    """The line with code spans blanked, so their content never counts as emphasis."""
    return _CODE_SPAN.sub(lambda match: " " * len(match.group()), line)


def _unbalanced(line: str) -> list[str]:
    """Closers this line lacks, in the order they must be appended."""
    missing = []
    code_free = _strip_code(line)
    if _BACKTICK_RUN.search(code_free):
        return [_BACKTICK_RUN.search(code_free).group()]  # an unclosed code span swallows the rest
    if _HORIZONTAL_RULE.match(line):
        return []
    body = _BULLET.sub(lambda match: " " * len(match.group()), code_free)
    for marker in ("**", "__"):
        count = sum(1 for match in _STRONG.finditer(body) if match.group() == marker)
        if count % 2:
            missing.append(marker)
    singles = _STRONG.sub("  ", body)
    stars = [i for i, char in enumerate(singles) if char == "*"
             and not (_space_at(singles, i - 1) and _space_at(singles, i + 1))]
    if len(stars) % 2:
        missing.insert(0, "*")
    return missing


def _space_at(text: str, index: int) -> bool:
    return index < 0 or index >= len(text) or text[index].isspace()


def _list_marker(line: str) -> tuple[int, str, re.Match] | None:
    """(indent, kind, match) of a list item line: kind is the bullet, or "." / ")" for ordered items."""
    if _HORIZONTAL_RULE.match(line):
        return None
    if match := _BULLET.match(line):
        return len(match.group(1)), match.group(2), match
    if match := _ORDERED.match(line):
        return len(match.group(1)), match.group(3), match
    return None


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


def problems(text: str) -> list[Problem]:
    """Every rule broken in `text`, in text order."""
    lines = _lines(text)
    found = []
    for table in _tables(lines):
        width = table.width
        for row in table.rows:
            count = len(cells(row.text))
            if count != width:
                found.append(Problem("table", table.rows[0].start, table.rows[-1].start + len(table.rows[-1].text),
                                     f"table row has {count} cells, the table has {width} columns"))
                break
    opened = _open_fence(lines)
    if opened is not None:
        found.append(Problem("fence", opened.start, len(text), "code fence is never closed"))
    for line, missing in _unbalanced_lines(lines):
        found.append(Problem("emphasis", line.start, line.start + len(line.text),
                             f"unclosed {' and '.join(missing)} on this line"))
    for line, kind, wanted in _list_problems(lines):
        found.append(Problem("list", line.start, line.start + len(line.text),
                             f"list marker {kind!r} differs from this list's {wanted!r}"))
    return sorted(found, key=lambda problem: (problem.start, problem.rule))


def _open_fence(lines: list[_Line]) -> _Line | None:
    fence_line, fence = None, None
    for line in lines:
        match = _FENCE.match(line.text)
        if not match:
            continue
        if fence is None:
            fence_line, fence = line, match.group(1)
        elif _closes(fence, match, line.text):
            fence_line, fence = None, None
    return fence_line


@dataclass(frozen=True)
class Outline:
    """The structure a fix must keep: a candidate that passes the rules by dissolving a table
    (or a fence, or a list) into prose has not fixed it."""

    table_rows: tuple[int, ...]  # rows of each table, in order
    fences: int  # fence lines
    list_items: int


def outline(text: str) -> Outline:
    lines = _lines(text)
    return Outline(tuple(len(table.rows) for table in _tables(lines)),
                   sum(1 for line in lines if _FENCE.match(line.text)),
                   sum(1 for line in lines if not line.in_code and _list_marker(line.text)))


FIX_ROUNDS = 3  # closing a code span can reveal emphasis it hid; a few rounds settle it


def fix(text: str) -> str:
    """`text` with every rule's deterministic fix applied; unchanged when nothing is broken."""
    for _ in range(FIX_ROUNDS):
        if not problems(text):
            break
        text = _fix_once(text)
    return text


def _unbalanced_lines(lines: list[_Line]) -> Iterator[tuple[_Line, list[str]]]:
    """Prose lines (not code, not table rows) with unclosed emphasis or inline code, and what is missing."""
    table_rows = {row.start for table in _tables(lines) for row in table.rows}
    for line in lines:
        if line.in_code or line.start in table_rows:
            continue
        missing = _unbalanced(line.text)
        if missing:
            yield line, missing


def _padded_rows(lines: list[_Line]) -> dict[int, str]:
    """Each table row with the table's column count, by the offset of the line it replaces."""
    return {row.start: new for table in _tables(lines)
            for row, new in zip(table.rows, _fixed_table(table), strict=True)}


def pad_tables(text: str) -> str:
    """`text` with the table rule's fix alone: every row gets its table's column count."""
    lines = _lines(text)
    padded = _padded_rows(lines)
    return "\n".join(padded.get(line.start, line.text) for line in lines)


def table_shapes(text: str) -> list[tuple[int, int]]:
    """Rows and columns of each table, in order."""
    return [(len(table.rows), table.width) for table in _tables(_lines(text))]


def empty_cells(text: str) -> list[int]:
    """Offsets that write into an empty cell of a table's header or body rows (after the
    cell's first space, if it has one): the places completing the table fills in."""
    offsets = []
    for table in _tables(_lines(text)):
        for position, row in enumerate(table.rows):
            if position == 1:  # the delimiter row is structure, not content
                continue
            offsets += [row.start + min(start + 1, end) for start, end in _cell_spans(row.text)
                        if not row.text[start:end].strip()]
    return offsets


def _fix_once(text: str) -> str:
    lines = _lines(text)
    replaced = _padded_rows(lines)
    for line, missing in _unbalanced_lines(lines):
        body = line.text.rstrip()
        replaced[line.start] = body + "".join(reversed(missing)) + line.text[len(body):]
    for line, kind, wanted in _list_problems(lines):
        current = replaced.get(line.start, line.text)
        _, _, match = _list_marker(current)
        marker_at = match.end(1) + (len(match.group(2)) if kind in ".)" else 0)
        replaced[line.start] = current[:marker_at] + wanted + current[marker_at + 1 :]
    out = "\n".join(replaced.get(line.start, line.text) for line in lines)
    opened = _open_fence(lines)
    if opened is not None:
        fence = _FENCE.match(opened.text).group(1)
        out += ("" if out.endswith("\n") else "\n") + fence + ("\n" if text.endswith("\n") else "")
    return out
