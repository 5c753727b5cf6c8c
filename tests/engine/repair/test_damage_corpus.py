"""The damage check: JSON and Markdown written by others (the files the installed Python packages
and the benchmarks' Node packages ship) go through Fix JSON and Fix Markdown. Valid JSON comes back
byte for byte, from the deterministic repair too; Markdown markdownlint finds clean for the rules
Fix Markdown repairs comes back byte for byte; and on every document, clean or not, the fix changes
no code block and makes no table that a CommonMark parser (markdown-it-py, GFM tables) does not see."""

from __future__ import annotations

import json
import re
import sysconfig
from email.parser import HeaderParser
from functools import cache
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from diffusion_infill.bench.markdown_fix import FIX_RULES, MARKDOWNLINT, lint
from diffusion_infill.bench.npm_peers import node_for
from diffusion_infill.engine.repair.fixes import Fixer
from diffusion_infill.engine.repair.jsonfix import structural_repair
from diffusion_infill.engine.repair.markdown_rules import problems

BENCH = Path(__file__).parents[3] / "src" / "diffusion_infill" / "bench"
MAX_CHARS = 200_000


def _roots() -> list[Path]:
    """The installed Python packages, and the Node packages the benchmarks install where they are."""
    roots = [Path(sysconfig.get_paths()["purelib"])]
    return roots + [folder for folder in sorted(BENCH.glob("*/node_modules")) if folder.is_dir()]


def _read(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None
    return text if len(text) <= MAX_CHARS else None


@cache
def valid_json() -> tuple[tuple[str, str], ...]:
    found = []
    for root in _roots():
        for path in sorted(root.rglob("*.json")):
            text = _read(path)
            try:
                json.loads(text or "")
            except (json.JSONDecodeError, RecursionError):
                continue
            found.append((str(path.relative_to(root)), text))
    return tuple(found)


@cache
def markdown() -> tuple[tuple[str, str], ...]:
    """Markdown README bodies (`*.dist-info/METADATA`) and `.md` files."""
    found = []
    for root in _roots():
        for metadata in sorted(root.glob("*.dist-info/METADATA")):
            message = HeaderParser().parsestr(metadata.read_text(encoding="utf-8", errors="replace"))
            body = message.get_payload()
            if (
                "markdown" in (message.get("Description-Content-Type") or "")
                and isinstance(body, str)
                and body.strip()
                and len(body) <= MAX_CHARS
            ):
                found.append((metadata.parent.name, body))
        for path in sorted(root.rglob("*.md")):
            if (text := _read(path)) is not None:
                found.append((str(path.relative_to(root)), text))
    return tuple(found)


def test_the_corpus_is_not_empty():
    assert len(valid_json()) >= 20 and len(markdown()) >= 30


def test_valid_json_comes_back_byte_for_byte():
    fixer = Fixer(None)
    changed = [
        name
        for name, text in valid_json()
        if fixer.fix_json(text).text != text
        or fixer.fix_jsonc(text).text != text
        or structural_repair(text) != text
        or structural_repair(text, jsonc=True) != text
    ]
    assert changed == []


@pytest.mark.skipif(
    node_for(MARKDOWNLINT, "markdownlint") is None,
    reason="needs Node 20+ and `npm ci` in src/diffusion_infill/bench/markdownlint (install.sh does it)",
)
def test_clean_markdown_comes_back_byte_for_byte():
    documents = markdown()
    found = lint([text for _, text in documents])
    clean = [(name, text) for (name, text), rules in zip(documents, found, strict=True) if not FIX_RULES & set(rules)]
    assert len(clean) >= 20
    fixer = Fixer(None)
    assert [name for name, text in clean if fixer.fix_markdown(text).text != text] == []


_PARSER = MarkdownIt("commonmark").enable("table")


def _code_and_tables(text: str) -> tuple[list[str], int]:
    """The content of every code block as CommonMark reads it, and how many tables GFM makes."""
    tokens = _PARSER.parse(text)
    stack = list(tokens)
    code, tables = [], 0
    while stack:
        token = stack.pop(0)
        if token.type in ("fence", "code_block"):
            code.append(token.content.rstrip("\n"))
        tables += token.type == "table_open"
    return code, tables


def test_fix_markdown_changes_no_code_block_and_makes_no_table():
    fixer = Fixer(None)
    damaged = []
    for name, text in markdown():
        fixed = fixer.fix_markdown(text).text
        if fixed == text:
            continue
        (code_before, tables_before), (code_after, tables_after) = _code_and_tables(text), _code_and_tables(fixed)
        if code_after != code_before or tables_after > tables_before:
            damaged.append(name)
    assert damaged == []


_FENCE_LINE = re.compile(r"^(?:[ \t]*>)*[ \t]*(`{3,}|~{3,})[ \t]*$")


def _fences(text: str) -> list[tuple[int, int]]:
    """(first, last) line of each closed fenced code block, as markdown-it reads them."""
    lines = text.split("\n")
    return [
        (token.map[0], token.map[1] - 1)
        for token in _PARSER.parse(text)
        if token.type == "fence"
        and token.map[1] - 1 > token.map[0]
        and token.map[1] - 1 < len(lines)
        and _FENCE_LINE.match(lines[token.map[1] - 1])
    ]


def _without_lines(text: str, dropped: set[int]) -> str:
    return "\n".join(line for index, line in enumerate(text.split("\n")) if index not in dropped)


def _damaged(text: str) -> list[str]:
    """Copies of a document with the damage Fix Markdown repairs: a fence's closing line dropped (up to
    three fences, one a copy), the blank lines around every fence dropped, a table's delimiter row and
    a body row one cell short."""
    lines, fences = text.split("\n"), _fences(text)
    copies = [_without_lines(text, {last}) for _, last in fences[:3]]
    around = {
        index
        for first, last in fences
        for index in (first - 1, last + 1)
        if 0 <= index < len(lines) and not lines[index].strip()
    }
    if around:
        copies.append(_without_lines(text, around))
    for token in _PARSER.parse(text):
        if token.type == "table_open":
            first, last = token.map
            rows = lines[first:last]
            if len(rows) > 2:
                cut = [
                    row[: row.rstrip().rstrip("|").rfind("|")] + (" |" if row.rstrip().endswith("|") else "")
                    for row in rows[1:3]
                ]
                copies.append("\n".join(lines[: first + 1] + cut + lines[first + 3 :]))
            break
    return copies


def _first_fence_closed(text: str) -> int | None:
    """Line of the first fence Fix Markdown closes (its code may end elsewhere after the fix), if any."""
    starts = [problem.start for problem in problems(text) if problem.rule == "fence"]
    return text.count("\n", 0, min(starts)) if starts else None


def test_fix_markdown_keeps_every_code_block_of_a_damaged_copy_but_the_fence_it_closes():
    fixer = Fixer(None)
    damaged, copies = [], 0
    for name, text in markdown():
        for copy in _damaged(text):
            copies += 1
            fixed = fixer.fix_markdown(copy).text
            closed = _first_fence_closed(copy)
            before = [token for token in _PARSER.parse(copy) if token.type in ("fence", "code_block")]
            kept = [token.content for token in before if closed is None or token.map[0] < closed]
            after = [token.content for token in _PARSER.parse(fixed) if token.type in ("fence", "code_block")]
            if (after if closed is None else after[: len(kept)]) != kept:
                damaged.append(name)
    assert copies >= 300, copies
    assert damaged == []
