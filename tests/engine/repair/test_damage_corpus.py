"""The damage check: JSON and Markdown written by others (the files the installed Python packages
and the benchmarks' Node packages ship) go through Fix JSON and Fix Markdown. Valid JSON comes back
byte for byte, from the deterministic repair too; Markdown markdownlint finds clean for the rules
Fix Markdown repairs comes back byte for byte; and on every document, clean or not, the fix changes
no code block and makes no table that a CommonMark parser (markdown-it-py, GFM tables) does not see."""

from __future__ import annotations

import json
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
            if "markdown" in (message.get("Description-Content-Type") or "") and isinstance(body, str) \
                    and body.strip() and len(body) <= MAX_CHARS:
                found.append((metadata.parent.name, body))
        for path in sorted(root.rglob("*.md")):
            if (text := _read(path)) is not None:
                found.append((str(path.relative_to(root)), text))
    return tuple(found)


def test_the_corpus_is_not_empty():
    assert len(valid_json()) >= 20 and len(markdown()) >= 30


def test_valid_json_comes_back_byte_for_byte():
    fixer = Fixer(None)
    changed = [name for name, text in valid_json()
               if fixer.fix_json(text).text != text or fixer.fix_jsonc(text).text != text
               or structural_repair(text) != text or structural_repair(text, jsonc=True) != text]
    assert changed == []


@pytest.mark.skipif(node_for(MARKDOWNLINT, "markdownlint") is None,
                    reason="needs Node 20+ and `npm ci` in src/diffusion_infill/bench/markdownlint "
                           "(install.sh does it)")
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
