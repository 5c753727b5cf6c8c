"""Which code actions a codeAction request is offered, found on the event loop in bounded time (editors ask
at every selection change): Fix JSON / Fix Markdown where a cheap check (or, for a selection too large to
check, our own diagnostics) finds something to fix, Complete table where a table has empty cells, Regenerate
for any selection; and the bounded text around a target that its repair sees."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from diffusion_infill.engine.repair import jsonfix, markdown_rules
from diffusion_infill.engine.repair.fixes import Fixer, FixResult, Surroundings, json_broken
from diffusion_infill.lsp.languages import (
    JSON_LANGUAGES,
    JSONC_LANGUAGES,
    MARKDOWN_LANGUAGES,
    SOURCE,
    closure_language,
)
from diffusion_infill.lsp.text.documents import Document
from diffusion_infill.lsp.text.positions import PositionError
from diffusion_infill.lsp.text.window import MAX_BEFORE, around

QUICKFIX, REWRITE = types.CodeActionKind.QuickFix, types.CodeActionKind.RefactorRewrite
KINDS = [QUICKFIX, REWRITE]
# Characters. The check that finds damage in a JSON selection stops at the first: about 1 ms at this size.
CHECK_MAX_CHARS = 50_000
# Characters. The Markdown rules and the empty-cell check read every line: 150 ms each for 50,000
# characters on the project's 2-core machine under load, seconds at 1 MB; about 15 ms at this size.
MARKDOWN_CHECK_MAX_CHARS = 5_000


@dataclass(frozen=True)
class Action:
    name: str  # "json", "jsonc", "markdown", "table" or "regenerate"
    title: str
    kind: types.CodeActionKind
    run: Callable[[Fixer, str, Surroundings], FixResult]
    model: bool  # needs the model: runs on the engine thread; else in the repairs process (lsp.fixes.repairs)


JSON = Action("json", "Fix JSON selection", QUICKFIX, Fixer.fix_json, model=False)
JSONC = Action("jsonc", "Fix JSON selection", QUICKFIX, Fixer.fix_jsonc, model=False)  # keeps comments, commas
MARKDOWN = Action("markdown", "Fix Markdown selection", QUICKFIX, Fixer.fix_markdown, model=False)
TABLE = Action("table", "Complete table", REWRITE, Fixer.complete_table, model=True)
REGENERATE = Action("regenerate", "Regenerate selection", REWRITE, Fixer.regenerate, model=True)
ACTIONS = {action.name: action for action in (JSON, JSONC, MARKDOWN, TABLE, REGENERATE)}


@dataclass(frozen=True)
class Target:
    action: Action
    start: int  # offsets into the document
    end: int
    diagnostics: tuple[types.Diagnostic, ...] = ()


def _looks_like_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")


def _json_action(document: Document) -> Action:
    return JSONC if jsonfix.is_jsonc(document.language_id, document.uri) else JSON


def _selection_targets(
    document: Document, start: int, end: int, diagnosed: tuple[types.Diagnostic, ...]
) -> list[Target]:
    """What a selection can be offered: a fix only where it finds something to fix (a cheap check,
    no model), so that no action is offered that can only fail."""
    if start == end:
        return []
    markdown = document.language_id in MARKDOWN_LANGUAGES
    if end - start > (MARKDOWN_CHECK_MAX_CHARS if markdown else CHECK_MAX_CHARS):
        return _large_selection_targets(document, start, end, diagnosed)
    selected = document.text[start:end]
    targets = []
    json_action = _json_action(document)
    if (document.language_id in JSON_LANGUAGES | JSONC_LANGUAGES or _looks_like_json(selected)) and json_broken(
        selected, jsonc=json_action is JSONC
    ):
        targets.append(Target(json_action, start, end))
    if markdown:
        if markdown_rules.problems(selected):
            targets.append(Target(MARKDOWN, start, end))
        if "|" in selected and markdown_rules.empty_cells(markdown_rules.pad_tables(selected)):
            targets.append(Target(TABLE, start, end))
    targets.append(Target(REGENERATE, start, end))
    return targets


def _large_selection_targets(
    document: Document, start: int, end: int, diagnosed: tuple[types.Diagnostic, ...]
) -> list[Target]:
    """A selection too large to check on the event loop: its fix is offered when our diagnostics in the
    request's context (the client sends those the selection touches) show a problem; Complete table,
    which needs a check of its own, is not offered."""
    if diagnosed and document.language_id in JSON_LANGUAGES | JSONC_LANGUAGES:
        return [Target(_json_action(document), start, end), Target(REGENERATE, start, end)]
    if diagnosed and document.language_id in MARKDOWN_LANGUAGES:
        return [Target(MARKDOWN, start, end), Target(REGENERATE, start, end)]
    return [Target(REGENERATE, start, end)]


def _ours(diagnostics: list[types.Diagnostic]) -> tuple[types.Diagnostic, ...]:
    return tuple(diagnostic for diagnostic in diagnostics if diagnostic.source == SOURCE)


def _diagnostic_targets(document: Document, diagnostics: list[types.Diagnostic]) -> list[Target]:
    ours = _ours(diagnostics)
    if not ours:
        return []
    if document.language_id in JSON_LANGUAGES | JSONC_LANGUAGES:
        return [Target(_json_action(document), 0, len(document.text), ours)]  # JSON is valid or not as a whole document
    if document.language_id not in MARKDOWN_LANGUAGES:
        return []
    lines, targets = document.lines, []
    for diagnostic in ours:
        first, last = diagnostic.range.start.line, diagnostic.range.end.line
        if not first < len(lines) or last < first:  # from an older version (the document shrank since)
            continue
        targets.append(Target(MARKDOWN, lines.start(first), lines.end(min(last, len(lines) - 1)), (diagnostic,)))
    return targets


def _wanted(kind: types.CodeActionKind, only: list[str] | None) -> bool:
    """Whether `kind` is among the kinds the client asked for (a kind covers its sub-kinds)."""
    name = str(getattr(kind, "value", kind))
    wanted = [str(getattr(item, "value", item)) for item in only or []]
    return not wanted or any(name == item or name.startswith(f"{item}.") for item in wanted)


def offsets(document: Document, where: types.Range, encoding: str) -> tuple[int, int]:
    try:
        start, end = document.lines.offset(where.start, encoding), document.lines.offset(where.end, encoding)
    except PositionError as error:
        raise JsonRpcInvalidParams(str(error)) from None
    if start > end:
        raise JsonRpcInvalidParams("the range ends before it starts")
    return start, end


def _one_markdown_fix(found: list[Target]) -> list[Target]:
    """The Markdown targets (each diagnostic's lines, the selection) as one, over all of them:
    one "Fix Markdown selection" that fixes everything in one application, where one per
    target fixed a fence and left the table beside it for a second run."""
    markdown = [target for target in found if target.action is MARKDOWN]
    if len(markdown) < 2:
        return found
    diagnostics = tuple(diagnostic for target in markdown for diagnostic in target.diagnostics)  # one each
    merged = Target(MARKDOWN, min(t.start for t in markdown), max(t.end for t in markdown), diagnostics)
    first = found.index(markdown[0])
    rest = [target for target in found if target.action is not MARKDOWN]
    return [*rest[:first], merged, *rest[first:]]


def targets(document: Document, params: types.CodeActionParams, encoding: str) -> list[Target]:
    """What the request can be offered, without duplicates, in the order offered."""
    start, end = offsets(document, params.range, encoding)
    found, ours = _diagnostic_targets(document, params.context.diagnostics), _ours(params.context.diagnostics)
    # A range that is one of our diagnostics' own is where the client points at it, not a selection.
    if not any(diagnostic.range == params.range for diagnostic in ours):
        found += _selection_targets(document, start, end, ours)
    unique: dict[tuple[str, int, int], Target] = {}
    for target in _one_markdown_fix(found):
        unique.setdefault((target.action.name, target.start, target.end), target)
    return [target for target in unique.values() if _wanted(target.action.kind, params.context.only)]


def surroundings(document: Document, target: Target) -> Surroundings:
    """The text around the target that the repair and the closure check see: bounded as a completion's
    (lsp.text.window), so a fix in a 10 MB file parses and keeps what one in a small file does."""
    language = closure_language(document.language_id, document.uri)
    # A repair reads the whole window of a long line, as it always has (lsp.text.window: MAX_LINE is for completions).
    return Surroundings(*around(document.text, target.start, target.end, max_line=MAX_BEFORE), language)
