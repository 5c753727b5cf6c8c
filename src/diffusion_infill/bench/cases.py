"""Held-out infilling cases for the benchmarks, from code no model here was trained on.

Sources: the held-out 5% of the stdlib (split by path hash, diffusion_infill.engine.training.corpus) and
third-party packages installed beside this project (training reads only their Markdown
descriptions, never their code). Kinds, drawn in turn:

- `line`: cursor mid-line after a non-word character; expected: the rest of the line.
- `mid-word`: cursor inside an identifier; expected: the rest of the line.
- `closers`: the rest of the line ends in closing characters that an editor auto-pairs
  (`)`, `]`, `}`, quotes); they stay after the cursor, expected: what comes before them.
- `span`: a short span inside a line, with the rest of the line after the cursor.
- `multi-line`: cursor at the indentation of a line; expected: that line and the next.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from diffusion_infill.engine.training.corpus import Document, stdlib_files

KINDS = ("line", "mid-word", "closers", "span", "multi-line")
THIRD_PARTY = (
    "pygls",
    "lsprotocol",
    "cattrs",
    "attr",
    "huggingface_hub",
    "filelock",
    "fsspec",
    "packaging",
    "tqdm",
    "jinja2",
)  # installed with the project's dependencies
CLOSERS = ")]}\"'"
CONTEXT_CHARS = 1500
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class Case:
    name: str  # source file:line:column (1-based)
    source: str  # "stdlib" or the third-party package
    kind: str  # one of KINDS
    prefix: str
    suffix: str
    expected: str  # the text the original file has at the cursor


def third_party_files() -> Iterator[Document]:
    for package in THIRD_PARTY:
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        for path in sorted(root.rglob("*.py")):
            try:
                yield Document(f"{package}/{path.relative_to(root).as_posix()}", "python", path.read_text("utf-8"))
            except (UnicodeDecodeError, OSError):
                continue


def sources() -> dict[str, str]:
    """Where cases come from, with versions, for the report."""
    versions = {}
    for package in THIRD_PARTY:
        try:
            versions[package] = importlib.metadata.version(package if package != "attr" else "attrs")
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def _cut(kind: str, line: str, rng: random.Random) -> tuple[int, int] | None:
    """(cursor, end of the expected text) within `line`, or None when the line does not fit `kind`."""
    body_start = len(line) - len(line.lstrip())
    if kind == "line":
        cuts = [i + 1 for i in range(body_start + 3, len(line) - 3) if not (line[i].isalnum() or line[i] == "_")]
        return (rng.choice(cuts), len(line)) if cuts else None
    if kind == "mid-word":
        words = [m for m in WORD.finditer(line, body_start + 2) if len(m.group()) >= 4]
        if not words:
            return None
        word = rng.choice(words)
        return rng.randrange(word.start() + 1, word.end() - 1), len(line)
    if kind == "closers":
        stripped = line.rstrip(CLOSERS)
        if len(stripped) == len(line) or len(stripped) - body_start < 6:
            return None
        opener = max(stripped.rfind(c) for c in "([{\"'")
        if opener < body_start or opener + 1 >= len(stripped):
            return None
        return opener + 1, len(stripped)
    if kind == "span":
        if len(line) - body_start < 12:
            return None
        start = rng.randrange(body_start + 4, len(line) - 4)
        return start, min(len(line), start + rng.randint(3, 20))
    raise ValueError(kind)


def _case(doc: Document, source: str, kind: str, rng: random.Random) -> Case | None:
    lines = doc.text.splitlines(keepends=True)
    if len(lines) < 3:
        return None
    index = rng.randrange(1, len(lines) - 2)
    line = lines[index].rstrip("\n")
    body = line.lstrip()
    if len(body) < 12 or body.startswith(("#", '"', "'")):
        return None
    if kind == "multi-line":
        following = lines[index + 1].rstrip("\n")
        if not following.strip() or len(body) + len(following.strip()) > 90:
            return None
        cursor, expected, rest = len(line) - len(body), body + "\n" + following, "\n"
        after_index = index + 2
    else:
        cut = _cut(kind, line, rng)
        if cut is None:
            return None
        cursor, end = cut
        expected, rest = line[cursor:end], line[end:] + "\n"
        if not 2 <= len(expected.strip()) <= 60:
            return None
        after_index = index + 1
    before = "".join(lines[:index]) + line[:cursor]
    after = rest + "".join(lines[after_index:])
    name = f"{doc.name}:{index + 1}:{cursor + 1}"
    return Case(name, source, kind, before[-CONTEXT_CHARS:], after[:CONTEXT_CHARS], expected)


def build_cases(count: int, seed: int) -> list[Case]:
    """`count` cases, half from held-out stdlib files and half from third-party code, kinds in turn."""
    rng = random.Random(seed)
    stdlib = [d for d in stdlib_files(held_out=True) if d.text.count("\n") > 20]
    third_party = [d for d in third_party_files() if d.text.count("\n") > 20]
    pools = [pool for pool in (stdlib, third_party) if pool]
    cases: list[Case] = []
    while len(cases) < count:
        kind = KINDS[len(cases) % len(KINDS)]
        doc = rng.choice(pools[len(cases) // len(KINDS) % len(pools)])
        source = "stdlib" if pools[0] is stdlib and doc in stdlib else doc.name.split("/", 1)[0]
        case = _case(doc, source, kind, rng)
        if case is not None:
            cases.append(case)
    return cases
