"""Pipe tables as GFM reads them: cells split at every pipe not escaped, a table where the
delimiter row makes one, and rows padded to the table's column count in its own style."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from diffusion_infill.engine.repair.markdown_rules.lines import _Line, _lines

_DELIMITER_CELL = re.compile(r"^\s*:?-{1,}:?\s*$")


def _cell_spans(row: str) -> list[tuple[int, int]]:
    """Where each cell's text lies in a table row, between its pipes; as in GFM, only an escaped
    pipe does not split (one inside a code span does)."""
    start, stop = len(row) - len(row.lstrip()), len(row.rstrip())
    if row.startswith("|", start):
        start += 1
    if stop > start and row[stop - 1] == "|" and row[stop - 2 : stop] != "\\|":
        stop -= 1
    if stop >= start and "\\" not in row[start:stop]:  # no escape: every pipe splits (str.split, not a char loop)
        spans, cell_start = [], start
        for cell in row[start:stop].split("|"):
            spans.append((cell_start, cell_start + len(cell)))
            cell_start += len(cell) + 1
        return spans
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


def _delimits(header: str, delimiter: str, body: list[str]) -> bool:
    """Whether a delimiter row makes a table of the header above it: with the header's cell count (else
    GFM reads no table), or short of it, written with a pipe (a dashed line without one is a heading
    underline or a rule) and with one of the first two body rows (`body`) wider than it: a table a
    delimiter cell was lost from. Where the rows after it are as short as it is, GFM's paragraph is
    what was meant (`| a | b |` over `| --- |` and `| c |`), and it is left alone."""
    wanted, found = len(cells(header)), len(cells(delimiter))
    if found == wanted:
        return True
    return found < wanted and "|" in delimiter and any(len(cells(row)) > found for row in body[:2])


@dataclass(frozen=True)
class _Table:
    rows: list[_Line]  # header, delimiter, body rows

    @cached_property  # the width, the problems and the fix each ask
    def counts(self) -> list[int]:
        """Cells in each row."""
        return [len(cells(row.text)) for row in self.rows]

    @cached_property
    def width(self) -> int:
        return max(self.counts)


def _body(lines: list[_Line], start: int, most: int) -> list[_Line]:
    """At most `most` rows of a table's body from line `start`: lines with a pipe, not code, not blank."""
    rows = []
    for line in lines[start : start + most]:
        if line.in_code or "|" not in line.text or not line.text.strip():
            break
        rows.append(line)
    return rows


def _tables(lines: list[_Line]) -> list[_Table]:
    tables, index = [], 0
    while index + 1 < len(lines):
        header, delimiter = lines[index], lines[index + 1]
        if (
            not header.in_code
            and "|" in header.text
            and not delimiter.in_code
            and _is_delimiter(delimiter.text)
            and _delimits(header.text, delimiter.text, [row.text for row in _body(lines, index + 2, 2)])
        ):
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
    for position, (row, count) in enumerate(zip(table.rows, table.counts, strict=True)):
        if count == width:
            out.append(row.text)
            continue
        parts = cells(row.text)
        spaced = any(part[:1] == " " or part[-1:] == " " for part in parts)  # its own style (MD060)
        cell = "---" if position == 1 else ""
        filler = (f" {cell} " if cell else " ") if spaced else cell
        if not style[1] and parts[-1].strip() and spaced:
            parts[-1] += " "  # `a | b` padded: `a | b | c`, not `a | b| c`
        out.append(_row_text(row.text, parts + [filler] * (width - len(parts)), style))
    return out


def _padded_rows(tables: list[_Table]) -> dict[int, str]:
    """Each table row with the table's column count, by the offset of the line it replaces."""
    return {row.start: new for table in tables for row, new in zip(table.rows, _fixed_table(table), strict=True)}


def pad_tables(text: str) -> str:
    """`text` with the table rule's fix alone: every row gets its table's column count."""
    lines = _lines(text)
    padded = _padded_rows(_tables(lines))
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
            offsets += [
                row.start + min(start + 1, end)
                for start, end in _cell_spans(row.text)
                if not row.text[start:end].strip()
            ]
    return offsets
