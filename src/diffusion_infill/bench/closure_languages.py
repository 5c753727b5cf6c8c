"""The closure check (diffusion_infill.engine.syntax_check) on real files of one language.

    python -m diffusion_infill.bench.closure_languages go /usr/share/go-1.19/src --skip testdata

Two kinds of cursor positions, drawn at random (--seed) from the given files of the language
(directories are walked; --skip leaves out directories of that name; at most --per-file of
each kind from one file), with the prefix and suffix windowed as the server windows them
(diffusion_infill.lsp.text.window):

- a real continuation: the cursor at a random column of a non-blank line, the candidate the
  rest of that line as the file has it. Inserting it gives back the real file, so the check
  should pass it; it can fail where the file has parse errors near by, or where the window
  cuts off the closer of a block the candidate's opener then takes.
- a retyped closer: a closing bracket of the file's syntax (a tree-sitter leaf, so not one
  inside a string or comment), the cursor after its opener and on its line, the candidate the
  text up to and including that closer, and the suffix still starting with it, as when an
  editor has auto-inserted the closer and the model types it again. The check should refuse
  it, and its longest valid prefix should be the candidate without the closer ("cut exactly").

Prints one JSON object on the last line: the counts for both kinds, the files that parse
with no error at all, and the median milliseconds of one check.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tree_sitter import Node, Parser

from diffusion_infill.cli.inputs import positive_int
from diffusion_infill.engine import languages, syntax_check
from diffusion_infill.lsp.text.window import around

_OPENERS = {"(": ")", "[": "]", "{": "}"}
_MAX_FILE_BYTES = 1_000_000  # generated tables, not code anyone completes


@dataclass(frozen=True)
class Position:
    """One completion at a cursor: what the check sees, and what it should keep of it."""

    prefix: str
    candidate: str
    suffix: str
    kept: str  # the valid insertion: the whole candidate, or it without the retyped closer


@dataclass
class Tally:
    files: int = 0
    clean_files: int = 0  # parsed with no ERROR or MISSING node
    continuations: int = 0
    continuations_passed: int = 0
    retyped_closers: int = 0
    retyped_cut: int = 0  # the check refused the candidate
    retyped_cut_exactly: int = 0  # and its longest valid prefix drops just the retyped closer
    ms: list[float] = field(default_factory=list, repr=False)  # each check's time

    def summary(self) -> dict[str, object]:
        fields = {key: value for key, value in vars(self).items() if key != "ms"}
        return {**fields, "check_ms_p50": round(statistics.median(self.ms), 2) if self.ms else None}


def files_of(language: str, paths: Sequence[Path], skip: Sequence[str] = ()) -> list[Path]:
    """The files of `language` among `paths`, directories walked, in a stable order."""
    found: list[Path] = []
    for path in paths:
        candidates = sorted(path.rglob("*")) if path.is_dir() else [path]
        found += [
            file
            for file in candidates
            if file.is_file()
            and languages.language_for_path(str(file)) == language
            and not set(file.relative_to(path).parts[:-1] if path.is_dir() else ()) & set(skip)
            and file.stat().st_size <= _MAX_FILE_BYTES
        ]
    return found


def continuations(text: str, rng: random.Random, count: int) -> Iterator[Position]:
    """Up to `count` cursors on random non-blank lines, each completed with the rest of its line."""
    starts = _line_starts(text)
    lines = [(start, end) for start, end in starts if text[start:end].strip()]
    for start, end in rng.sample(lines, min(count, len(lines))):
        indent = len(text[start:end]) - len(text[start:end].lstrip())
        cursor = rng.randrange(start + indent, end)
        prefix, suffix = around(text, cursor, end)
        yield Position(prefix, text[cursor:end], suffix, text[cursor:end])


def retyped_closers(text: str, root: Node, rng: random.Random, count: int) -> Iterator[Position]:
    """Up to `count` syntactic closers of the file, each typed again before the suffix's copy.

    The cursor lies after the closer's opener, so that the suffix's closer is the one closing
    it, as when an editor auto-inserted it.
    """
    encoded = _encode(text)
    pairs = list(_bracket_pairs(root, encoded))
    for opener_end, closer_byte in rng.sample(pairs, min(count, len(pairs))):
        opener, closer = (len(encoded[:byte].decode("utf-8", "surrogateescape")) for byte in (opener_end, closer_byte))
        line_start = text.rfind("\n", 0, closer) + 1
        indent = len(text[line_start:closer]) - len(text[line_start:closer].lstrip())
        cursor = rng.randint(max(opener, line_start + indent), closer)
        prefix, suffix = around(text, cursor, closer)
        yield Position(prefix, text[cursor : closer + 1], suffix, text[cursor:closer])


def _bracket_pairs(root: Node, encoded: bytes) -> Iterator[tuple[int, int]]:
    """(byte after the opener, byte of the closer) for the brackets among each node's own tokens.

    Only leaves count, so brackets in strings and comments do not; a closer whose opener is
    not a token of the same node (a grammar that splits them) is left out.
    """
    pending = [root]
    while pending:
        node = pending.pop()
        pending.extend(child for child in node.children if child.child_count)
        stack: list[tuple[str, int]] = []
        for child in node.children:
            if child.is_named or child.is_missing or child.child_count:
                continue
            for offset in range(child.start_byte, child.end_byte):
                char = chr(encoded[offset])
                if char in _OPENERS:
                    stack.append((_OPENERS[char], offset + 1))
                elif char in _OPENERS.values() and stack and stack[-1][0] == char:
                    yield stack.pop()[1], offset


def _line_starts(text: str) -> list[tuple[int, int]]:
    """(start, end) of every line, the end before its newline."""
    spans, start = [], 0
    for line in text.split("\n"):
        spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


def measure(language: str, files: Sequence[Path], positions: int, seed: int, per_file: int = 5) -> Tally:
    """`positions` cursors of each kind, at most `per_file` from each file, the files in random order."""
    rng = random.Random(seed)
    parser = Parser(languages.tree_sitter_language(language))
    tally = Tally()
    for file in rng.sample(list(files), len(files)):
        if tally.continuations >= positions and tally.retyped_closers >= positions:
            break
        text = file.read_text(encoding="utf-8", errors="surrogateescape").replace("\r\n", "\n")
        root = parser.parse(_encode(text)).root_node
        tally.files += 1
        tally.clean_files += not root.has_error
        wanted = min(per_file, positions - tally.continuations)
        for position in continuations(text, rng, wanted):
            tally.continuations += 1
            tally.continuations_passed += _timed(tally, position, language).valid
        wanted = min(per_file, positions - tally.retyped_closers)
        for position in retyped_closers(text, root, rng, wanted):
            tally.retyped_closers += 1
            if not _timed(tally, position, language).valid:
                tally.retyped_cut += 1
                kept = syntax_check.longest_valid_prefix(position.prefix, position.candidate, position.suffix, language)
                tally.retyped_cut_exactly += kept == position.kept
    return tally


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")  # files that are not UTF-8 keep their bytes


def _timed(tally: Tally, position: Position, language: str) -> syntax_check.ClosureReport:
    started = time.perf_counter()
    report = syntax_check.check(position.prefix, position.candidate, position.suffix, language)
    tally.ms.append((time.perf_counter() - started) * 1000)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("language", help="a name of engine.languages.LANGUAGES, e.g. go, rust, bash")
    parser.add_argument("paths", nargs="+", type=Path, help="files or directories of that language")
    parser.add_argument("--positions", type=positive_int, default=200, help="cursor positions of each kind")
    parser.add_argument("--per-file", type=positive_int, default=5, help="at most this many of each kind from one file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip", action="append", default=[], help="a directory name to leave out (repeatable)")
    args = parser.parse_args(argv)
    if args.language not in languages.LANGUAGES:
        print(f"closure_languages: no grammar named {args.language!r}", file=sys.stderr)
        return 2
    files = files_of(args.language, args.paths, args.skip)
    if not files:
        print(f"closure_languages: no {args.language} files under the paths given", file=sys.stderr)
        return 2
    tally = measure(args.language, files, args.positions, args.seed, args.per_file)
    print(json.dumps({"language": args.language, "seed": args.seed, **tally.summary()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
