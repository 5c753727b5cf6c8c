"""Fix Markdown on valid Markdown and on the same documents broken, judged by markdownlint and a renderer.

Corpus: the Markdown README bodies of the installed Python packages (the METADATA of each
`*.dist-info` with `Description-Content-Type: text/markdown`) and their `*.md` files,
sorted by path. Every document goes through the deterministic fix (what `diffusion-infill
fix --no-model` does). Measured:
- `valid changed`: documents markdownlint finds nothing wrong with in the rules the fix
  repairs (FIX_RULES) that the fix still changed (must be 0; every other document may
  be changed only where those rules are broken);
- `violations added`: markdownlint violations (any rule, default configuration) the fix
  adds, counted per rule (must be 0);
- `render changed`: documents where a top-level block the fix did not touch renders
  differently afterwards (markdown-it-py, CommonMark; must be 0).
The same is measured on broken copies (BREAKS: a fence's closing line cut, the blank line
before or after a fence removed, a fence's language removed, a table row's last cell
removed), where `repaired` counts documents the fix leaves with no problem of ours.
markdownlint runs in one Node process (src/diffusion_infill/bench/markdownlint/lint.mjs, `npm ci` there).
Prints a Markdown table, then one JSON object on the last line.

    python -m diffusion_infill.bench.markdown_fix [--limit N] [--seed S]
"""

from __future__ import annotations

import argparse
import difflib
import json
import random
import re
import subprocess
import sysconfig
from collections import Counter
from collections.abc import Callable
from email.parser import HeaderParser
from pathlib import Path

from markdown_it import MarkdownIt

from diffusion_infill.bench.npm_peers import node_for
from diffusion_infill.engine.repair.fixes import Fixer
from diffusion_infill.engine.repair.markdown_rules import problems

MARKDOWNLINT = Path(__file__).parent / "markdownlint"
# markdownlint's rules for what Fix Markdown repairs: blank lines around fences, fence language,
# table column count, list marker style.
FIX_RULES = frozenset({"MD031", "MD040", "MD056", "MD004"})
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def documents(
    limit: int | None = None, max_chars: int | None = None, root: Path | None = None
) -> list[tuple[str, str]]:
    """(name, text) of the installed packages' Markdown READMEs and .md files, sorted by name;
    at most `limit` of them, each at most `max_chars` long."""
    root = root or Path(sysconfig.get_paths()["purelib"])
    found = []
    for metadata in sorted(root.glob("*.dist-info/METADATA")):
        message = HeaderParser().parsestr(metadata.read_text(encoding="utf-8", errors="replace"))
        body = message.get_payload()
        if "markdown" in (message.get("Description-Content-Type") or "") and isinstance(body, str) and body.strip():
            found.append((metadata.parent.name, body))
    for path in sorted(root.rglob("*.md")):
        try:
            found.append((str(path.relative_to(root)), path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
    return [(name, text) for name, text in found if max_chars is None or len(text) <= max_chars][:limit]


def lint(texts: list[str]) -> list[Counter]:
    """markdownlint's violations of each text, counted per rule (each distinct text linted once)."""
    node = node_for(MARKDOWNLINT, "markdownlint")
    if node is None:
        raise RuntimeError(
            "markdownlint is not installed: run `npm ci` in src/diffusion_infill/bench/markdownlint (Node 20 or later)"
        )
    distinct = list(dict.fromkeys(texts))
    lines = "".join(json.dumps(text) + "\n" for text in distinct)
    done = subprocess.run(
        [node, str(MARKDOWNLINT / "lint.mjs")], input=lines, capture_output=True, text=True, check=True, timeout=600
    )
    found = {
        text: Counter(rule for rule, _ in json.loads(line))
        for text, line in zip(distinct, done.stdout.splitlines(), strict=True)
    }
    return [found[text] for text in texts]


_RENDERER = MarkdownIt("commonmark").enable("table")


def blocks(text: str) -> list[tuple[range, str]]:
    """Each top-level block of `text`: the lines it spans and its HTML."""
    tokens = _RENDERER.parse(text)
    out, start = [], 0
    for index, token in enumerate(tokens):
        if token.level == 0 and token.nesting <= 0:  # a block closes (or is a single token) at the top
            first = tokens[start]
            lines = range(*first.map) if first.map else range(0)
            out.append((lines, _RENDERER.renderer.render(tokens[start : index + 1], _RENDERER.options, {})))
            start = index + 1
    return out


def untouched_render_alike(before: str, after: str) -> bool:
    """Whether every top-level block of `before` with no changed line renders the same in `after`."""
    matcher = difflib.SequenceMatcher(None, before.split("\n"), after.split("\n"), autojunk=False)
    changed = {
        line for tag, i1, i2, _, _ in matcher.get_opcodes() if tag != "equal" for line in range(max(i1 - 1, 0), i2 + 1)
    }  # a line inserted next to a block touches it
    rendered_after = Counter(html for _, html in blocks(after))
    kept = Counter(html for lines, html in blocks(before) if not changed.intersection(lines))
    return not kept - rendered_after


def fix(text: str) -> str:
    return Fixer(None).fix_markdown(text).text


def _fence_lines(lines: list[str]) -> list[int]:
    return [index for index, line in enumerate(lines) if _FENCE.match(line)]


def cut_closing_fence(rng: random.Random, lines: list[str]) -> list[str] | None:
    fences = _fence_lines(lines)
    return lines[: fences[-1]] + lines[fences[-1] + 1 :] if len(fences) >= 2 else None


def no_blank_around_fence(rng: random.Random, lines: list[str]) -> list[str] | None:
    fences = _fence_lines(lines)
    blanks = [
        index + step
        for index in fences
        for step in (-1, 1)
        if 0 < index + step < len(lines) - 1 and not lines[index + step].strip()
    ]
    if not blanks:
        return None
    drop = rng.choice(blanks)
    return lines[:drop] + lines[drop + 1 :]


def no_fence_language(rng: random.Random, lines: list[str]) -> list[str] | None:
    opening = [index for index in _fence_lines(lines)[::2] if lines[index].strip().strip("`~")]
    if not opening:
        return None
    index = rng.choice(opening)
    marker = _FENCE.match(lines[index]).group(1)
    return lines[:index] + [lines[index][: lines[index].index(marker) + len(marker)]] + lines[index + 1 :]


def short_table_row(rng: random.Random, lines: list[str]) -> list[str] | None:
    rows = [
        index
        for index in range(2, len(lines))
        if lines[index].strip().startswith("|")
        and lines[index].count("|") >= 3
        and re.match(r"^\s*\|?\s*:?-+", lines[index - 1] or "")
    ]
    if not rows:
        return None
    index = rng.choice(rows)
    row = lines[index].rstrip()
    cut = row.rstrip("|").rfind("|")
    return lines[:index] + [row[: cut + 1]] + lines[index + 1 :]


BREAKS: dict[str, Callable[[random.Random, list[str]], list[str] | None]] = {
    "closing fence cut": cut_closing_fence,
    "no blank line around a fence": no_blank_around_fence,
    "no fence language": no_fence_language,
    "table row short of a cell": short_table_row,
}


def measure(texts: list[str], originals: list[str] | None = None) -> dict:
    """`originals`: the documents `texts` are broken copies of. What a fix reveals that the damage hid
    (the prose after a fence it closes where its code ends) is judged against them: a violation the
    original has too is not added, and a block that renders as in the original has not changed."""
    originals = originals or texts
    fixed = [fix(text) for text in texts]
    judged = lint(texts + fixed + (originals if originals is not texts else []))
    before, after = judged[: len(texts)], judged[len(texts) : 2 * len(texts)]
    known = [old | original for old, original in zip(before, judged[2 * len(texts) :] or before, strict=True)]
    added = Counter()
    for old, new in zip(known, after, strict=True):
        added += new - old
    return {
        "documents": len(texts),
        "changed": sum(a != b for a, b in zip(texts, fixed, strict=True)),
        "valid changed": sum(
            text != new and not (FIX_RULES & set(old)) for text, new, old in zip(texts, fixed, before, strict=True)
        ),
        "repaired": sum(not problems(new) for new in fixed),
        "violations added": dict(added),
        "render changed": sum(
            not untouched_render_alike(text, new) and not untouched_render_alike(original, new)
            for text, new, original in zip(texts, fixed, originals, strict=True)
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, help="at most this many documents")
    parser.add_argument("--seed", type=int, default=20261203)
    args = parser.parse_args()
    corpus = documents(args.limit)
    rows = {"valid documents": measure([text for _, text in corpus])}
    rng = random.Random(args.seed)
    for name, damage in BREAKS.items():
        broken = [(damage(rng, text.split("\n")), text) for _, text in corpus]
        pairs = [("\n".join(lines), text) for lines, text in broken if lines is not None]
        rows[name] = measure([copy for copy, _ in pairs], [text for _, text in pairs])
    print("| corpus | documents | changed | valid changed | repaired | violations added | render changed |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, row in rows.items():
        valid_changed = row["valid changed"] if name == "valid documents" else "-"  # broken copies are not valid
        print(
            f"| {name} | {row['documents']} | {row['changed']} | {valid_changed} | {row['repaired']} | "
            f"{sum(row['violations added'].values())} | {row['render changed']} |"
        )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
