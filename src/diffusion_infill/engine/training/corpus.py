"""The training corpus: stdlib Python, generated JSON, and Markdown.

Sources are the running interpreter's standard library (split into train and held-out
files by a hash of the path), JSON documents generated from stdlib identifiers, and
Markdown: the long descriptions in installed packages' metadata (prose, not their
code) plus generated tables, lists and fenced blocks. Third-party source code is never
read here: it is kept for evaluation.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
import random
import re
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HELD_OUT_PERCENT = 5
MAX_FILE_BYTES = 200_000
IDENTIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{2,20}\b")


@dataclass(frozen=True)
class Document:
    name: str  # a path relative to its source, for the manifest
    kind: str  # "python", "json" or "markdown"
    text: str


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def stdlib_description() -> str:
    """Which standard library was read, without this machine's install path."""
    return f"{platform.python_implementation()} {platform.python_version()} standard library"


def is_held_out(relative_path: str) -> bool:
    digest = hashlib.sha256(relative_path.encode()).digest()
    return digest[0] * 100 // 256 < HELD_OUT_PERCENT


def stdlib_files(held_out: bool) -> Iterator[Document]:
    """Stdlib .py files of one split, in a stable order."""
    root = stdlib_root()
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if "site-packages" in relative or is_held_out(relative) != held_out:
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        yield Document(relative, "python", text)


def _words(documents: list[Document], rng: random.Random, limit: int = 4000) -> list[str]:
    seen: set[str] = set()
    for doc in rng.sample(documents, min(200, len(documents))):
        seen.update(IDENTIFIER.findall(doc.text))
    return sorted(seen)[:limit]


def _json_value(rng: random.Random, words: list[str], depth: int):
    roll = rng.random()
    if depth > 0 and roll < 0.25:
        return {rng.choice(words): _json_value(rng, words, depth - 1) for _ in range(rng.randint(1, 5))}
    if depth > 0 and roll < 0.4:
        return [_json_value(rng, words, depth - 1) for _ in range(rng.randint(0, 4))]
    if roll < 0.6:
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 3)))
    if roll < 0.75:
        return rng.randint(-1000, 100000)
    if roll < 0.85:
        return round(rng.uniform(-100, 100), rng.randint(1, 4))
    return rng.choice([True, False, None])


def generated_json(words: list[str], rng: random.Random, count: int) -> Iterator[Document]:
    for index in range(count):
        value = {rng.choice(words): _json_value(rng, words, 3) for _ in range(rng.randint(2, 7))}
        indent = rng.choice([None, 2, 2, 4])
        yield Document(f"generated/{index}.json", "json", json.dumps(value, indent=indent) + "\n")


def _table(rng: random.Random, words: list[str]) -> str:
    columns = rng.randint(2, 5)
    header = [rng.choice(words) for _ in range(columns)]
    rows = [[rng.choice(words + [str(rng.randint(0, 999))]) for _ in range(columns)] for _ in range(rng.randint(1, 6))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rng.choice(["---", ":--", "--:"]) for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _markdown_block(rng: random.Random, words: list[str], code: list[Document]) -> str:
    roll = rng.random()
    if roll < 0.3:
        return _table(rng, words)
    if roll < 0.55:
        marker = rng.choice(["-", "*", "1."])
        return "\n".join(f"{marker} {' '.join(rng.sample(words, 3))}" for _ in range(rng.randint(2, 5)))
    if roll < 0.8:
        lines = rng.choice(code).text.splitlines()
        start = rng.randrange(max(1, len(lines) - 6))
        return "```python\n" + "\n".join(lines[start : start + rng.randint(2, 6)]) + "\n```"
    words_used = [rng.choice(words) for _ in range(rng.randint(5, 15))]
    emphasis = rng.randrange(len(words_used))
    words_used[emphasis] = rng.choice(["**{}**", "*{}*", "`{}`"]).format(words_used[emphasis])
    return " ".join(words_used) + "."


def generated_markdown(words: list[str], code: list[Document], rng: random.Random, count: int) -> Iterator[Document]:
    for index in range(count):
        blocks = [f"# {rng.choice(words)}"] + [_markdown_block(rng, words, code) for _ in range(rng.randint(2, 5))]
        yield Document(f"generated/{index}.md", "markdown", "\n\n".join(blocks) + "\n")


def package_descriptions() -> Iterator[Document]:
    """Markdown long descriptions of installed distributions: prose, not their code."""
    seen = set()
    for dist in sorted(importlib.metadata.distributions(), key=lambda d: d.metadata["Name"] or ""):
        name = dist.metadata["Name"]
        body = dist.metadata.get_payload() or dist.metadata.get("Description") or ""
        content_type = dist.metadata.get("Description-Content-Type") or ""
        if name in seen or len(body) < 200 or "markdown" not in content_type:
            continue
        seen.add(name)
        yield Document(f"metadata/{name}", "markdown", body)


def training_documents(seed: int, generated: int = 3000) -> list[Document]:
    rng = random.Random(seed)
    code = list(stdlib_files(held_out=False))
    words = _words(code, rng)
    documents = code + list(generated_json(words, rng, generated))
    documents += list(generated_markdown(words, code, rng, generated)) + list(package_descriptions())
    return documents


def manifest(documents: list[Document]) -> dict:
    counts: dict[str, dict[str, int]] = {}
    for doc in documents:
        entry = counts.setdefault(doc.kind, {"documents": 0, "characters": 0})
        entry["documents"] += 1
        entry["characters"] += len(doc.text)
    return {
        "stdlib": stdlib_description(),
        "held_out_percent": HELD_OUT_PERCENT,
        "kinds": counts,
        "metadata_packages": sorted(d.name.split("/", 1)[1] for d in documents if d.name.startswith("metadata/")),
        "sha256": hashlib.sha256("".join(d.name for d in documents).encode()).hexdigest(),
    }
