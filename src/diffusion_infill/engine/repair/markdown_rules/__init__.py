"""Structural rules for Markdown, and the deterministic fix for each.

Rules (each Problem names one, with the span it covers):
- "table": every row of a pipe table (header, delimiter row, body rows) has the same
  number of cells, split where GFM splits them; the fix adds the missing cells (in the
  table's pipe style) and, when a row has more cells than the header, widens the header
  and delimiter row instead of dropping the extra cells. A delimiter row short of the
  header's cells (GFM then reads no table) is a table that lost a cell when a row after it
  is wider than it; with rows as short as it, it is GFM's paragraph, left alone;
- "fence": a code fence opened is closed; the fix closes it where its code ends (before
  a heading, or before plain prose after a blank line), else at the end of the text. A
  fence holding a line that opens a fence of its kind with a language lost its closing
  line too (not when that line is its first: it shows a fenced example); a fence opened
  on a list item's marker line is the item's; a closing fence written left of its list
  item is moved into the item;
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

One module a job: lines (the line model), tables (GFM tables), rules (the problems, and what a
fix must keep), fixing (the fixes).
"""

from diffusion_infill.engine.repair.markdown_rules.fixing import fix, fixed
from diffusion_infill.engine.repair.markdown_rules.rules import (
    Outline,
    Problem,
    Reading,
    code_blocks,
    fence_languages,
    model_changes,
    outline,
    problems,
    read,
)
from diffusion_infill.engine.repair.markdown_rules.tables import cells, empty_cells, pad_tables, table_shapes

__all__ = [
    "Outline",
    "Problem",
    "Reading",
    "cells",
    "code_blocks",
    "empty_cells",
    "fence_languages",
    "fix",
    "fixed",
    "model_changes",
    "outline",
    "pad_tables",
    "problems",
    "read",
    "table_shapes",
]
