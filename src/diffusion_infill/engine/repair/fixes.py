"""Fix JSON, fix Markdown and regenerate a selection: candidates, validation, choice.

Every fix gathers candidates from the deterministic repair and from the diffusion
repair (diffusion_infill.engine.repair.diffusion), validates each one the same way (JSON must load, JSONC once its
comments and trailing commas are blanked out; Markdown must pass diffusion_infill.engine.repair.markdown_rules;
a regenerated selection must keep the file's closure), and keeps the valid candidate
that loses the least of what the user wrote, then has the smallest edit. When none is
valid the result says why and carries the text unchanged.

A model's candidate for a fix may drop or move what the user wrote but never add to it:
a JSON candidate is considered only when every string, key and number it holds is in the
selection as written (or in its escaped form) and it adds no more objects, arrays and
literals than the deterministic repair does (`jsonfix.added`); a Markdown candidate only
when it adds no word, writes no fence's language and keeps every code block as it was
(`markdown_rules.model_changes`); and no candidate that holds a special token's text
(`<end>`, `<eos>` ...) more often than the selection does.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from itertools import groupby
from typing import TYPE_CHECKING

from diffusion_infill.engine import syntax_check
from diffusion_infill.engine.repair import jsonfix, markdown_rules
from diffusion_infill.engine.repair.diff import Diff, diff
from diffusion_infill.engine.repair.spans import Span

if TYPE_CHECKING:  # torch: a fix without a model never imports it
    from diffusion_infill.engine.repair.diffusion import DiffusionRepairer

log = logging.getLogger(__name__)
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Surroundings:
    before: str = ""  # document text before the selection: the encoder's context
    after: str = ""  # document text after it: clamped after the canvas
    language: str | None = None  # closure grammar for "regenerate" ("python", "json", ...)


@dataclass(frozen=True)
class Candidate:
    text: str
    source: str  # "structure" (deterministic) or "diffusion"


@dataclass(frozen=True)
class FixResult:
    text: str  # the fixed selection; the original one when not fixed
    fixed: bool
    reason: str | None = None  # why not, when not fixed
    source: str | None = None  # which kind of candidate won
    tried: int = 0  # candidates validated
    valid_sources: tuple[str, ...] = ()  # the source of every distinct valid candidate, best first
    already_valid: bool = False  # not fixed because nothing is broken


def edit_size(before: str, after: str) -> int:
    """Characters inserted, deleted or replaced to turn `before` into `after`."""
    return diff(before, after).size


class Edits:
    """Each candidate's differences from one original: found once, and only when a result uses them."""

    def __init__(self, original: str):
        self.original = original
        self._found: dict[str, Diff] = {}

    def of(self, candidate: str) -> Diff:
        if candidate not in self._found:
            self._found[candidate] = diff(self.original, candidate)
        return self._found[candidate]


Cost = int | tuple[int, ...]


def rank(
    original: str,
    candidates: list[Candidate],
    valid: Callable[[str], bool],
    lost: Callable[[str], Cost],
    edits: Edits | None = None,
) -> list[Candidate]:
    """The distinct valid candidates that change something: least content lost first (`lost`
    may count several things, compared in turn), then the smallest edit (diffed only between
    candidates that lose as much)."""
    edits = edits or Edits(original)
    seen, passed = set(), []
    for candidate in candidates:
        if candidate.text in seen or candidate.text == original:
            continue
        seen.add(candidate.text)
        if valid(candidate.text):
            passed.append(candidate)
    if len(passed) < 2:
        return passed  # nothing to weigh: what each loses is not counted
    ranked = sorted(((lost(candidate.text), candidate) for candidate in passed), key=lambda item: item[0])
    best = []
    for _, tied in groupby(ranked, key=lambda item: item[0]):
        group = [candidate for _, candidate in tied]
        if len(group) > 1:
            group.sort(key=lambda candidate: edits.of(candidate.text).size)
        best += group
    return best


def admissible(original: str, candidates: list[Candidate], adds: Callable[[str, str], Counter]) -> list[Candidate]:
    """The candidates a fix may choose from: every deterministic one, and the model's that add
    nothing to `original` (`adds(original, candidate)` is empty)."""
    return [
        candidate for candidate in candidates if candidate.source != "diffusion" or not adds(original, candidate.text)
    ]


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


_STRICT = json.JSONDecoder(parse_constant=_not_json)  # as every JSON parser but Python's: no NaN, no Infinity


def _loads(text: str) -> bool:
    try:
        _STRICT.decode(text)
    except (ValueError, RecursionError):
        return False
    return True


def _as_json(text: str, jsonc: bool) -> str:
    """What json.loads must accept: JSONC with its comments and trailing commas blanked out."""
    return jsonfix.strip_jsonc(text) if jsonc else text


def json_broken(text: str, jsonc: bool = False) -> bool:
    """Whether Fix JSON has something to do: the text is not blank and not valid already."""
    return bool(text.strip()) and not _loads(_as_json(text, jsonc))


def json_valid(text: str, jsonc: bool = False, comments: Counter | None = None) -> bool:
    """Whether `text` loads (JSONC: once its comments and trailing commas are blanked out) and, in JSONC,
    keeps `comments` as written."""
    if not _loads(_as_json(text, jsonc)):
        return False
    return not jsonc or comments is None or jsonfix.comments(text) == comments


def rank_json(
    text: str, candidates: list[Candidate], jsonc: bool = False, edits: Edits | None = None
) -> list[Candidate]:
    """The valid JSON candidates a fix may choose, best first: the deterministic ones, and the model's
    that hold nothing `text` lacks (`jsonfix.added`, with the deterministic repair vouching for the
    structure it adds); least of the user's keys and values lost, then the smallest edit."""
    comments = jsonfix.comments(text) if jsonc else None  # only JSONC keeps them
    structural = next((candidate.text for candidate in candidates if candidate.source == "structure"), None)
    reference = structural if structural is not None and json_valid(structural, jsonc) else None
    written = cache(lambda: jsonfix.words(text))  # counted only when two candidates are weighed

    def lost(candidate: str) -> int:
        return sum((written() - jsonfix.words(candidate)).values())

    def adds(original: str, candidate: str) -> Counter:
        return jsonfix.added(original, candidate, reference, jsonc)

    return rank(
        text, admissible(text, candidates, adds), lambda candidate: json_valid(candidate, jsonc, comments), lost, edits
    )


def markdown_validator(deterministic: str, left: list[markdown_rules.Problem] | None = None) -> Callable[[str], bool]:
    """A Markdown candidate is valid when it breaks no rule and keeps the structure of the
    deterministic fix (a table must not pass the rules by turning into prose). `left`: the problems
    of the deterministic fix, when they are known."""
    structure = cache(lambda: markdown_rules.outline(deterministic))  # read only for another candidate

    def valid(candidate: str) -> bool:
        if candidate == deterministic:
            return not (markdown_rules.problems(candidate) if left is None else left)
        return not markdown_rules.problems(candidate) and markdown_rules.outline(candidate) == structure()

    return valid


def _result(original: str, candidates: list[Candidate], ranked: list[Candidate], reason: str) -> FixResult:
    if not ranked:
        return FixResult(original, False, reason, tried=len(candidates))
    return FixResult(
        ranked[0].text,
        True,
        source=ranked[0].source,
        tried=len(candidates),
        valid_sources=tuple(candidate.source for candidate in ranked),
    )


class Fixer:
    """The code actions' engine side; `repairer` is None when the model cannot fill canvases.
    `model_fixes`: Fix JSON and Fix Markdown take the model's candidates too (Complete table and
    Regenerate always use it): measured, its candidates changed few answers and were wrong more often
    than right (docs/fixes.md), at seconds a fix on a CPU, so the server leaves them out."""

    def __init__(
        self, repairer: DiffusionRepairer | None, unavailable: str = "no model is loaded", model_fixes: bool = True
    ):
        self.repairer = repairer
        self.unavailable = unavailable  # why there is no repairer, for "regenerate" to say
        self.model_fixes = model_fixes

    @property
    def _fixes_use_model(self) -> bool:
        """Whether Fix JSON and Fix Markdown ask the model for candidates: only then are the changes
        of the deterministic fix (the model's gaps) and the damage located."""
        return self.model_fixes and self.repairer is not None

    def _diffusion(self, text: str, spans: list[Span], around: Surroundings) -> list[Candidate]:
        if self.repairer is None or not spans:
            return []
        try:
            filled = self.repairer.fill(around.before, text, spans, around.after)
        except (RuntimeError, ValueError) as error:  # e.g. out of memory on a long selection: keep the others
            log.warning("diffusion repair failed: %s", error)
            return []
        return [Candidate(candidate, "diffusion") for candidate in filled if not self._leaks(text, candidate)]

    def _leaks(self, original: str, candidate: str) -> bool:
        """Whether a special token's text is in `candidate` more often than in `original`."""
        return any(candidate.count(special) > original.count(special) for special in self.repairer.special_texts)

    def fix_json(self, text: str, around: Surroundings = Surroundings(), jsonc: bool = False) -> FixResult:
        """With `jsonc`, comments and trailing commas are allowed: never taken for damage, and a candidate
        must keep every comment as the user wrote it."""
        dialect = "JSONC" if jsonc else "JSON"
        if not text.strip():
            return FixResult(text, False, "the selection is empty")
        if json_valid(text, jsonc):
            return FixResult(text, False, f"the selection is already valid {dialect}", already_valid=True)
        structural = jsonfix.structural_repair(text, jsonc)
        if structural is None:
            return FixResult(
                text,
                False,
                "the selection is nested too deeply to repair"
                if jsonfix.too_deep(text)
                else f"the selection is not {dialect}: there is no {dialect} value in it",
            )
        candidates, edits = [Candidate(structural, "structure")], Edits(text)
        if self._fixes_use_model:
            candidates += self._diffusion(text, edits.of(structural).spans, around)
            damaged = [Span(item.start, item.end) for item in jsonfix.damage(_as_json(text, jsonc))]
            candidates += self._diffusion(text, damaged, around)
        return _result(
            text,
            candidates,
            rank_json(text, candidates, jsonc, edits),
            f"no candidate repair of the selection is valid {dialect}",
        )

    def fix_json_lines(self, text: str, around: Surroundings = Surroundings()) -> FixResult:
        """JSON Lines (`.jsonl`, `.ndjson`): each line its own JSON document, fixed alone, so the text stays
        one value a line (jsonlines.org); blank lines are kept. Not fixed when a broken line has no fix."""
        lines, broken = text.splitlines(keepends=True), 0
        for index, line in enumerate(lines):
            body = line.rstrip("\r\n")
            if not json_broken(body):
                continue
            broken += 1
            result = self.fix_json(body, around)
            if not result.fixed:
                return replace(result, reason=f"line {index + 1}: {result.reason}")
            lines[index] = result.text + line[len(body) :]
        if not broken:
            return FixResult(text, False, "the selection is already valid JSON Lines", already_valid=True)
        return FixResult("".join(lines), True, source="structure", tried=broken)

    def fix_jsonc(self, text: str, around: Surroundings = Surroundings()) -> FixResult:
        """JSON with comments and trailing commas (VS Code settings, tsconfig)."""
        return self.fix_json(text, around, jsonc=True)

    def fix_markdown(self, text: str, around: Surroundings = Surroundings()) -> FixResult:
        reading = markdown_rules.read(text)
        found = reading.problems
        if not found:
            return FixResult(text, False, "no Markdown structure problems in the selection", already_valid=True)
        deterministic, left = markdown_rules.fixed(text, reading)
        candidates, edits = [Candidate(deterministic, "structure")], Edits(text)
        if self._fixes_use_model:
            spans = edits.of(deterministic).spans + [Span(problem.end, problem.end) for problem in found]
            candidates += self._diffusion(text, spans, around)
        written = cache(lambda: Counter(_WORD.findall(text)))  # counted only when two candidates are weighed

        def lost(candidate: str) -> int:
            return sum((written() - Counter(_WORD.findall(candidate))).values())

        def changes(original: str, candidate: str) -> Counter:
            return markdown_rules.model_changes(original, deterministic, candidate)

        ranked = rank(text, admissible(text, candidates, changes), markdown_validator(deterministic, left), lost, edits)
        return _result(
            text,
            candidates,
            ranked,
            "no candidate passes the Markdown rules: " + "; ".join(problem.message for problem in found),
        )

    def complete_table(self, text: str, around: Surroundings = Surroundings()) -> FixResult:
        """The model writes the empty cells of the selection's tables, rows short of cells
        padded first, each cell a gap between the row's clamped pipes. A candidate is valid
        when every table keeps its rows and columns; the one that keeps every word and fills
        the most cells wins. At most `max_gaps` cells a time: ask again for the rest."""
        if self.repairer is None:
            return FixResult(text, False, f"cannot complete the table: {self.unavailable}")
        padded = markdown_rules.pad_tables(text)
        offsets = markdown_rules.empty_cells(padded)
        if not offsets:
            return FixResult(text, False, "no table with an empty or missing cell in the selection")
        offsets = offsets[: self.repairer.settings.max_gaps]  # more would merge gaps across pipes
        candidates = self._diffusion(padded, [Span(offset, offset) for offset in offsets], around)
        shapes, written = markdown_rules.table_shapes(padded), Counter(_WORD.findall(text))
        empty = len(markdown_rules.empty_cells(padded))

        def valid(candidate: str) -> bool:
            return (
                markdown_rules.table_shapes(candidate) == shapes and len(markdown_rules.empty_cells(candidate)) < empty
            )

        def lost(candidate: str) -> tuple[int, int]:
            return (
                sum((written - Counter(_WORD.findall(candidate))).values()),
                len(markdown_rules.empty_cells(candidate)),
            )

        ranked = [candidate for candidate in rank(text, candidates, valid, lost) if lost(candidate.text)[0] == 0]
        return _result(
            text,
            candidates,
            ranked,
            f"the model wrote nothing that fits the {len(offsets)} empty "
            + ("cell" if len(offsets) == 1 else "cells")
            + " between their pipes",
        )

    def regenerate(self, text: str, around: Surroundings = Surroundings()) -> FixResult:
        if self.repairer is None:
            return FixResult(text, False, f"cannot regenerate: {self.unavailable}")
        try:
            filled = self.repairer.regenerate(around.before, text, around.after)
        except (RuntimeError, ValueError) as error:
            return FixResult(text, False, f"regeneration failed: {error}")
        candidates = [Candidate(candidate, "diffusion") for candidate in filled if not self._leaks(text, candidate)]
        for candidate in candidates:
            if (
                candidate.text.strip()
                and candidate.text != text
                and syntax_check.check(around.before, candidate.text, around.after, around.language).valid
            ):
                return FixResult(candidate.text, True, source="diffusion", tried=len(candidates))
        if not candidates:
            return FixResult(text, False, "the selection is too long to regenerate", tried=0)
        return FixResult(
            text, False, "every regenerated text was empty, unchanged or broke the file's syntax", tried=len(candidates)
        )
