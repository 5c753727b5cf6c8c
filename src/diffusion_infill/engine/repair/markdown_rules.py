"""Structural rules for Markdown, and the deterministic fix for each.

Rules (each Problem names one, with the span it covers):
- "table": every row of a pipe table (header, delimiter row, body rows) has the same
  number of cells, split where GFM splits them; the fix adds the missing cells (in the
  table's pipe style) and, when a row has more cells than the header, widens the header
  and delimiter row instead of dropping the extra cells. A delimiter row short of the
  header's cells (GFM then reads no table) is a table that lost a cell;
- "fence": a code fence opened is closed; the fix closes it where its code ends (before
  a heading, or before plain prose after a blank line), else at the end of the text. A
  fence holding a line that opens a fence of its kind with a language lost its closing
  line too; a closing fence written left of its list item is moved into the item;
- "fence-blank" (markdownlint MD031): a fence has a blank line before it (unless it
  starts the text) and after its closing line (unless that ends the text); the fix
  inserts one (in a block quote, an empty quoted line);
- "fence-language" (markdownlint MD040): an opening fence names its language; the fix
  adds `json` for text that loads as JSON, `sh` for shell commands, else `text`;
- "emphasis": `**`, `__`, single `*` and inline code backticks are balanced in a
  paragraph (they may span its lines, as in CommonMark); the fix closes an unclosed one
  at the end of the line it opened on. Only openers and closers count: an asterisk
  between spaces, between two letters or between two punctuation marks is literal;
- "list": the items of one list use one bullet marker (`-`, `*` or `+`) or one ordered
  delimiter (`.` or `)`); the fix uses the first item's.
Lines are read as CommonMark does for these constructs (fences may be indented inside
list items and quoted in block quotes); content inside code fences is never checked. A
fix changes only what a rule names: every other line stays byte for byte.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace

# A fence line: any indentation (list items indent theirs), inside any block quote prefix.
_FENCE = re.compile(r"^((?:[ \t]*>)*[ \t]*)(`{3,}|~{3,})")
_QUOTE_PREFIX = re.compile(r"^(?:[ \t]*>)*")
_HEADING = re.compile(r"^ {0,3}#{1,6}(\s|$)")
# The start of an HTML block, as CommonMark reads it: kinds 1-5 (raw text tags, comments,
# processing instructions, declarations, CDATA) end at their own closer; kind 6 (block-level
# tags), and kind 7 (any tag alone on its line, only after a blank line), at a blank line.
_HTML_CLOSED_BY = ((re.compile(r"^ {0,3}<(script|pre|style|textarea)(\s|>|$)", re.IGNORECASE), None),
                   (re.compile(r"^ {0,3}<!--"), "-->"), (re.compile(r"^ {0,3}<\?"), "?>"),
                   (re.compile(r"^ {0,3}<![A-Za-z]"), ">"), (re.compile(r"^ {0,3}<!\[CDATA\["), "]]>"))
_HTML_BLOCK = re.compile(
    r"^ {0,3}</?(?:address|article|aside|blockquote|body|center|details|dialog|dd|div|dl|dt|figcaption|figure|"
    r"footer|form|h[1-6]|header|hr|li|main|nav|ol|p|picture|section|source|summary|table|tbody|td|tfoot|th|thead|"
    r"tr|ul)(?:\s|/?>|$)", re.IGNORECASE)
_HTML_TAG_LINE = re.compile(r"^ {0,3}</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>\s*$")
_ESCAPED = re.compile(r"\\.")
_SHELL = re.compile(r"^\s*(\$ |(pip|pip3|npm|npx|git|cd|python|python3|uv|make|curl|docker|export|conda|brew|apt|"
                    r"apt-get|sudo|pytest|nvim|code)\b)")
_DELIMITER_CELL = re.compile(r"^\s*:?-{1,}:?\s*$")
_BULLET = re.compile(r"^(\s*)([-*+])(\s+)(?=\S)")
_ORDERED = re.compile(r"^(\s*)(\d{1,9})([.)])(\s+)(?=\S)")
_BACKTICK_RUN = re.compile(r"`+")
_EMPHASIS = re.compile(r"\*\*|__|\*")
_WORD = re.compile(r"\w+")
_NOT_OPENING = frozenset(",.;:!?)]}")
_HORIZONTAL_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")
# Plain prose, not code: a capital, four words or more without code's punctuation, a sentence's end.
_PROSE_LINE = re.compile(r"[A-Z][\w'’,-]*(?: [^\s=;{}<>$\\|#]+){3,}[.:!?]")


@dataclass(frozen=True)
class Problem:
    rule: str  # "table", "fence", "fence-blank", "fence-language", "emphasis" or "list"
    start: int  # character offsets of what the problem covers
    end: int
    message: str


@dataclass(frozen=True)
class _Line:
    start: int  # offset of the line's first character
    text: str  # without its line break
    in_code: bool  # inside a fenced or indented code block (or an HTML block), fences included
    fence: str = ""  # "open" or "close" for a fence line
    closes_at: str = ""  # the last line of a fence its container (quote, list item) ended: the closing line it lacks


@dataclass
class _Reading:
    """A fence being read: where it was opened, so that it ends with its container."""

    marker: str  # the fence's backticks or tildes
    depth: int  # block quotes it is inside
    indent: int  # content indent of the list item it is inside (0: none)
    prefix: str  # what precedes the fence on its opening line: quote markers, indentation
    last: int  # index of its last line that is not blank


def _depth(line: str) -> int:
    return _QUOTE_PREFIX.match(line).group().count(">")


def _inner(line: str) -> str:
    """The line inside its block quotes (the one space after the last `>` belongs to the marker)."""
    prefix = _QUOTE_PREFIX.match(line).end()
    inner = line[prefix:]
    return inner[1:] if prefix and inner.startswith(" ") else inner


def _indent(line: str) -> int:
    """Columns of indentation (a tab reaches the next multiple of 4)."""
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
    """The fence a line opens, if it opens one: a backtick fence's info string has no backtick
    (```` ```x``` ```` is inline code)."""
    match = _FENCE.match(line)
    if match and match.group(2)[0] == "`" and "`" in line[match.end():]:
        return None
    return match


def _closes(fence: str, line: str) -> bool:
    """Whether a line closes the open `fence`: same character, at least as long, nothing after."""
    match = _FENCE.match(line)
    return match is not None and match.group(2)[0] == fence[0] and len(match.group(2)) >= len(fence) \
        and not line[match.end():].strip()


def _lines(text: str) -> list[_Line]:
    """The lines, each marked when it is code, as CommonMark reads them: in a fence (which ends at
    its closing line or where the block quote or list item it was opened in ends), in an
    indented code block (four columns past the list item's content, after a blank line), or
    in an HTML block (which runs to a blank line and swallows fences written inside it)."""
    lines: list[_Line] = []
    offset, reading, html, previous_blank, items, depth = 0, None, None, True, [], 0
    for raw in text.split("\n"):
        inner, line_depth = _inner(raw), _depth(raw)
        indent, blank = _indent(inner), not inner.strip()
        if reading is not None and (line_depth < reading.depth or (reading.indent and not blank
                                                                    and indent < reading.indent)):
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
            if not blank and (previous_blank or _opening(raw) or _list_marker(inner)):
                items = [item for item in items if indent >= item]  # the line is outside those items
            own = items[-1] if items else 0
            if not blank and indent - own >= 4 and (previous_blank or (lines and lines[-1].in_code
                                                                       and not lines[-1].fence)):
                code = True  # an indented code block
            elif (match := _opening(raw)) and indent - own <= 3:
                kind, code = "open", True
                reading = _Reading(match.group(2), line_depth, own, match.group(1), len(lines))
            elif _list_marker(inner):
                items.append(_content_indent(inner))
        previous_blank = blank
        lines.append(_Line(offset, raw, code or kind == "close", kind))
        offset += len(raw) + 1
    return lines


def _html_start(line: str, after_blank: bool) -> str | None:
    """What ends the HTML block this line starts ("" for a blank line), or None when it starts none."""
    for pattern, closer in _HTML_CLOSED_BY:
        if match := pattern.match(line):
            return closer if closer is not None else f"</{match.group(1).lower()}>"
    if _HTML_BLOCK.match(line) or (after_blank and _HTML_TAG_LINE.match(line)):
        return ""
    return None


def _blank(line: str) -> bool:
    """Blank, or blank inside its block quote."""
    return not line[_QUOTE_PREFIX.match(line).end():].strip()


def _cell_spans(row: str) -> list[tuple[int, int]]:
    """Where each cell's text lies in a table row, between its pipes; as in GFM, only an escaped
    pipe does not split (one inside a code span does)."""
    start, stop = len(row) - len(row.lstrip()), len(row.rstrip())
    if row.startswith("|", start):
        start += 1
    if stop > start and row[stop - 1] == "|" and row[stop - 2 : stop] != "\\|":
        stop -= 1
    spans, cell_start, index = [], start, start
    while index < stop:
        char = row[index]
        if char == "\\" and index + 1 < stop:
            index += 2
            continue
        if char == "|":
            spans.append((cell_start, index))
            cell_start = index + 1
        index += 1
    spans.append((cell_start, stop))
    return spans


def cells(row: str) -> list[str]:
    """The cells of a table row, split where GFM splits them: at every pipe not escaped."""
    return [row[start:end] for start, end in _cell_spans(row)]


def _is_delimiter(row: str) -> bool:
    return "-" in row and all(_DELIMITER_CELL.match(cell) for cell in cells(row))


def _delimits(header: str, delimiter: str) -> bool:
    """Whether a delimiter row makes a table of the header above it: with the header's cell count (else
    GFM reads no table), or short of it and written with a pipe (a table a cell was lost from; a
    dashed line without one is a heading underline or a rule)."""
    wanted, found = len(cells(header)), len(cells(delimiter))
    return found == wanted or (found < wanted and "|" in delimiter)


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
        if not header.in_code and "|" in header.text and not delimiter.in_code and _is_delimiter(delimiter.text) \
                and _delimits(header.text, delimiter.text):
            end = index + 2
            while end < len(lines) and not lines[end].in_code and "|" in lines[end].text and lines[end].text.strip():
                end += 1
            tables.append(_Table(lines[index:end]))
            index = end
        else:
            index += 1
    return tables


def _pipes(row: str) -> tuple[bool, bool]:
    """Whether a row starts and ends with a pipe (markdownlint MD055: a table keeps its first row's style)."""
    stripped = row.strip()
    return stripped.startswith("|"), stripped.endswith("|") and not stripped.endswith("\\|")


def _row_text(row: str, parts: list[str], style: tuple[bool, bool]) -> str:
    """A row from its cells, with the table's leading and trailing pipes; an empty last cell needs a
    trailing pipe whatever the style (without one GFM would not count it)."""
    indent = row[: len(row) - len(row.lstrip())]
    leading, trailing = style
    trailing = trailing or not parts[-1].strip()
    body = indent + ("|" if leading else "") + "|".join(parts)
    return body + "|" if trailing else body.rstrip()


def _fixed_table(table: _Table) -> list[str]:
    width, out, style = table.width, [], _pipes(table.rows[0].text)
    for position, row in enumerate(table.rows):
        parts = cells(row.text)
        if len(parts) == width:
            out.append(row.text)
            continue
        spaced = any(part[:1] == " " or part[-1:] == " " for part in parts)  # its own style (MD060)
        cell = "---" if position == 1 else ""
        filler = (f" {cell} " if cell else " ") if spaced else cell
        if not style[1] and parts[-1].strip() and spaced:
            parts[-1] += " "  # `a | b` padded: `a | b | c`, not `a | b| c`
        out.append(_row_text(row.text, parts + [filler] * (width - len(parts)), style))
    return out


def _code_spans(text: str) -> tuple[str, int | None]:
    """`text` with its code spans written over (they may span lines), and the offset of the first
    backtick run no run of its length closes, if any."""
    chars, runs = list(text), [match for match in _BACKTICK_RUN.finditer(text)
                               if match.start() == 0 or text[match.start() - 1] != "\\"]
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
    for match in _EMPHASIS.finditer(text):
        opens, closes = _flanking(text, match.start(), match.end())
        marker = match.group()
        if closes and any(item == marker for _, item in open_markers):
            last = max(i for i, (_, item) in enumerate(open_markers) if item == marker)
            del open_markers[last:]
        elif opens:
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
    blanked = "\n".join(_BULLET.sub(lambda match: " " * len(match.group()), row) for row in text.split("\n"))
    code_free, unclosed_code = _code_spans(blanked)  # before escapes: a backslash in a code span is text
    code_free = _ESCAPED.sub("  ", code_free)
    missing: dict[int, list[str]] = {}
    starts = [0]
    for line in group[:-1]:
        starts.append(starts[-1] + len(line.text) + 1)

    def line_of(offset: int) -> _Line:
        return group[max(i for i, start in enumerate(starts) if start <= offset)]

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
    return [line for line in lines if line.fence == "open" and not line.text[_FENCE.match(line.text).end():].strip()]


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
    for opening, inner in _swallowed(lines):
        found.append(Problem("fence", opening.start, inner.start + len(inner.text),
                             "code fence is never closed before the next one opens"))
    for opening, last in _ended_by_container(lines):
        found.append(Problem("fence", opening.start, last.start + len(last.text),
                             "code fence is never closed before its block quote or list item ends"))
    for line, side in _fence_blanks(lines):
        found.append(Problem("fence-blank", line.start, line.start + len(line.text),
                             f"code fence needs a blank line {side} it"))
    for line in _unlabelled(lines):
        found.append(Problem("fence-language", line.start, line.start + len(line.text),
                             "code fence does not name its language"))
    for line, missing in _unbalanced_lines(lines):
        found.append(Problem("emphasis", line.start, line.start + len(line.text),
                             f"unclosed {' and '.join(missing)} on this line"))
    for line, kind, wanted in _list_problems(lines):
        found.append(Problem("list", line.start, line.start + len(line.text),
                             f"list marker {kind!r} differs from this list's {wanted!r}"))
    return sorted(found, key=lambda problem: (problem.start, problem.rule))


def _swallowed(lines: list[_Line]) -> list[tuple[_Line, _Line]]:
    """(opening line, inner line) of each fence that holds a line opening a fence of its own kind with a
    language (`` ```bash ``): such a line cannot close it, so the fence before it was never closed and the
    closing line of the next one closed it instead."""
    found, opening = [], None
    for line in lines:
        if line.fence == "open":
            opening = line
        elif line.fence == "close" or line.closes_at:
            opening = None
        elif opening is not None and not any(pair[0] is opening for pair in found) and _opens_like(opening, line):
            found.append((opening, line))
    return found


def _opens_like(opening: _Line, line: _Line) -> bool:
    """Whether `line` would open a fence like `opening` (same marker, as long or longer, same indent), with a
    language."""
    outer, inner = _FENCE.match(opening.text), _opening(line.text)
    return inner is not None and inner.group(1) == outer.group(1) and inner.group(2)[0] == outer.group(2)[0] \
        and len(inner.group(2)) >= len(outer.group(2)) and bool(line.text[inner.end():].strip())


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
    return Outline(tuple(len(table.rows) for table in _tables(lines)),
                   sum(1 for line in lines if line.fence),
                   sum(1 for line in lines if not line.in_code and _list_marker(line.text)))


def fence_languages(text: str) -> list[str]:
    """The info string of each opening fence, in order."""
    return [line.text[_FENCE.match(line.text).end():].strip() for line in _lines(text) if line.fence == "open"]


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


FIX_ROUNDS = 3  # closing a code span can reveal emphasis it hid; a few rounds settle it
MAX_REFENCED = 50  # rounds that only close a fence swallowing the next one's opening line


def fix(text: str) -> str:
    """`text` with every rule's deterministic fix applied; unchanged when nothing is broken. A text whose
    every line ends in CRLF is fixed with CRLF line endings, the lines a fix adds included."""
    if "\r\n" in text and text.count("\n") == text.count("\r\n"):
        return fix(text.replace("\r\n", "\n")).replace("\n", "\r\n")
    rounds = refenced = 0
    while rounds < FIX_ROUNDS and refenced < MAX_REFENCED and problems(text):
        text, only_fence = _fix_once(text)
        rounds, refenced = rounds + (not only_fence), refenced + only_fence
    return text


def _unbalanced_lines(lines: list[_Line]) -> Iterator[tuple[_Line, list[str]]]:
    """Prose lines (not code, not table rows) with unclosed emphasis or inline code, and what is missing."""
    table_rows = {row.start for table in _tables(lines) for row in table.rows}
    by_start = {line.start: line for line in lines}
    for group in _paragraphs(lines, table_rows):
        for start, missing in sorted(_unbalanced_in(group).items()):
            yield by_start[start], missing


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


def _language(lines: list[_Line], opening: _Line) -> str:
    """A language for an unlabelled fence, from its content: json, sh or text."""
    index = lines.index(opening)
    body = []
    for line in lines[index + 1 :]:
        if line.fence == "close":
            break
        body.append(line.text[_QUOTE_PREFIX.match(line.text).end():])
        if line.closes_at:
            break
    content = "\n".join(body).strip()
    try:
        json.loads(content)
        return "json" if content[:1] in "{[" else "text"
    except json.JSONDecodeError:
        pass
    return "sh" if content and all(_SHELL.match(row) for row in content.split("\n") if row.strip()) else "text"


def _fix_once(text: str) -> tuple[str, bool]:
    """`text` with one round of fixes, and whether it was only a swallowing fence closed (the fences
    after it pair up anew, so every other fix waits for the next round)."""
    lines = _lines(text)
    for opening, inner in _swallowed(lines)[:1]:
        end = lines[_code_end(lines, opening, lines.index(inner))]
        match = _FENCE.match(opening.text)
        return "\n".join(line.text + ("\n" + match.group(1) + match.group(2) if line is end else "")
                         for line in lines), True
    replaced = _padded_rows(lines)
    for line, missing in _unbalanced_lines(lines):
        body = line.text.rstrip()
        replaced[line.start] = body + "".join(reversed(missing)) + line.text[len(body):]
    for line, kind, wanted in _list_problems(lines):
        current = replaced.get(line.start, line.text)
        _, _, match = _list_marker(current)
        marker_at = match.end(1) + (len(match.group(2)) if kind in ".)" else 0)
        replaced[line.start] = current[:marker_at] + wanted + current[marker_at + 1 :]
    for line in _unlabelled(lines):
        replaced[line.start] = line.text.rstrip() + _language(lines, line)
    reindented = set()
    for _, last in _ended_by_container(lines):
        after = _dedented_closer(lines, last)
        if after is not None:  # the closing fence, written left of the item's indent: moved into the item
            replaced[after.start] = last.closes_at
            reindented.add(after.start)
        else:
            replaced[last.start] = replaced.get(last.start, last.text) + "\n" + last.closes_at
    blank_after = {}  # line index -> the blank line to insert after it; one between two fences
    index_of = {line.start: index for index, line in enumerate(lines)}
    for line, side in _fence_blanks(lines):
        if line.start in reindented:
            continue  # a closing fence now, in the item: no blank line goes before it
        index = index_of[line.start] - (side == "before")
        blank_after[index] = _QUOTE_PREFIX.match(line.text).group().rstrip()
    for index, blank in blank_after.items():
        line = lines[index]
        replaced[line.start] = replaced.get(line.start, line.text) + "\n" + blank
    opened = _open_fence(lines)
    at_end = ""  # the closing fence to append, for a fence whose code runs to the end
    if opened is not None and opened.start not in reindented:
        match = _FENCE.match(opened.text)
        closer, end = match.group(1) + match.group(2), _code_end(lines, opened)
        if end is None:
            at_end = closer
        else:
            replaced[lines[end].start] = replaced.get(lines[end].start, lines[end].text) + "\n" + closer
    out = "\n".join(replaced.get(line.start, line.text) for line in lines)
    if at_end:
        out += ("" if out.endswith("\n") else "\n") + at_end + ("\n" if text.endswith("\n") else "")
    return out, False


def _dedented_closer(lines: list[_Line], last: _Line) -> _Line | None:
    """The line that ended the list item or block quote a fence was open in, when it is that fence's
    closing line written with less indentation (then it opens a new fence): None otherwise."""
    index = lines.index(last) + 1
    while index < len(lines) and lines[index].in_code and not lines[index].fence and _blank(lines[index].text):
        index += 1
    if index == len(lines) or lines[index].fence != "open":
        return None
    following = lines[index]
    marker = _FENCE.match(last.closes_at).group(2)
    return following if _closes(marker, following.text) else None


def _code_end(lines: list[_Line], opening: _Line, stop: int | None = None) -> int | None:
    """Index of the last line of an unclosed fence's code: the last line that is not blank before
    a heading or, after a blank line, a line of plain prose at the fence's own indent, or before
    line `stop`; None when the code runs to the end of the text."""
    start = lines.index(opening)
    indent = _indent(_inner(opening.text))
    last = start
    for index in range(start + 1, len(lines) if stop is None else stop):
        line = _inner(lines[index].text)
        if not line.strip():
            continue
        previous_blank = not _inner(lines[index - 1].text).strip()
        following = _inner(lines[index + 1].text) if index + 1 < len(lines) else ""
        if _indent(line) <= indent and (_ends_code_as_heading(line, previous_blank, not following.strip())
                                        or (previous_blank and _PROSE_LINE.fullmatch(line.strip()))):
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
