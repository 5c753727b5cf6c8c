"""textDocument/codeAction and codeAction/resolve: Fix JSON selection, Fix Markdown
selection (quickfix), Complete table and Regenerate selection (refactor.rewrite).

Targets come from the selection (any non-empty range) and from our own diagnostics in
the request's context (for JSON the whole document, for Markdown the problem's lines). Finding
them is cheap at any size (editors ask at every selection change): a selection over
CHECK_MAX_CHARS is not checked here, its fix is offered only where our diagnostics (checked in
their own process) show a problem. Fix JSON and Fix Markdown run in a process of their own
(lsp.fixes.repairs: stopped when the document changes or a newer fix is asked for), Complete table and
Regenerate, which need the model, on the engine thread (diffusion_infill.engine.repair.fixes);
each once per document version and target (editors ask again at every cursor move); a fixed
target becomes a versioned
WorkspaceEdit that replaces exactly the target's range. A target with no valid fix is
offered disabled with the reason and edits nothing; a client that cannot show disabled
actions is not sent it (as the spec asks) but told the reason in a message instead.

A client that resolves edits lazily (`resolveSupport` with `edit`, and `dataSupport`) gets
the actions at once, each with `data` naming its target and document version, and the
repair runs only for the action the user picks, in codeAction/resolve. A client that cannot is
sent a target over EAGER_MAX_CHARS as an action whose command (FIX_COMMAND, with the same data)
runs the repair when the user picks it and applies the edit with workspace/applyEdit, where the
client can (its title says so). An edit is never returned for another version than the one it
was computed on: resolve fails instead.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import attrs
from cattrs import transform_error
from cattrs.errors import BaseValidationError
from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from diffusion_infill.engine.lru import Lru
from diffusion_infill.engine.repair import markdown_rules
from diffusion_infill.engine.repair.fixes import Fixer, FixResult, Surroundings, json_broken
from diffusion_infill.lsp.fixes.repairs import Asked, Stopped
from diffusion_infill.lsp.languages import (
    JSON_LANGUAGES,
    JSONC_LANGUAGES,
    MARKDOWN_LANGUAGES,
    SOURCE,
    closure_language,
)
from diffusion_infill.lsp.text.documents import Document, UnknownDocument
from diffusion_infill.lsp.text.positions import PositionError
from diffusion_infill.lsp.text.window import MAX_BEFORE, around

QUICKFIX, REWRITE = types.CodeActionKind.QuickFix, types.CodeActionKind.RefactorRewrite
KINDS = [QUICKFIX, REWRITE]
FIX_COMMAND = "diffusionInfill.fix"  # runs an action offered without its edit, for clients that cannot resolve
# Characters. The check that finds damage in a JSON selection stops at the first: about 1 ms at this size.
CHECK_MAX_CHARS = 50_000
# Characters. The Markdown rules and the empty-cell check read every line: 150 ms each for 50,000
# characters on the project's 2-core machine under load, seconds at 1 MB; about 15 ms at this size.
MARKDOWN_CHECK_MAX_CHARS = 5_000
# Characters. Above this, a client that cannot resolve an edit lazily is offered the action as a command
# (the repair runs when chosen) rather than its edit computed while it asks for the list.
EAGER_MAX_CHARS = 50_000


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
_converter = get_converter()


class RequestFailed(JsonRpcException):
    """LSP's RequestFailed: a valid request the server cannot carry out; the message says why."""

    CODE = types.LSPErrorCodes.RequestFailed.value
    MESSAGE = "Request Failed"


@dataclass(frozen=True)
class Support:
    """What the client's capabilities let the server send."""

    disabled: bool  # actions with `disabled` and its reason
    resolve: bool  # actions without their edit, which codeAction/resolve fills in from their `data`
    apply_edit: bool  # workspace/applyEdit: a command can make the edit once the user picks the action

    @classmethod
    def of(cls, capabilities: types.ClientCapabilities) -> Support:
        apply_edit = bool(capabilities.workspace and capabilities.workspace.apply_edit)
        capability = capabilities.text_document and capabilities.text_document.code_action
        if not capability:
            return cls(disabled=False, resolve=False, apply_edit=apply_edit)
        resolvable = capability.resolve_support is not None and "edit" in capability.resolve_support.properties
        return cls(
            disabled=bool(capability.disabled_support),
            resolve=resolvable and bool(capability.data_support),
            apply_edit=apply_edit,
        )


@dataclass(frozen=True)
class Target:
    action: Action
    start: int  # offsets into the document
    end: int
    diagnostics: tuple[types.Diagnostic, ...] = ()


FixKey = tuple[str, int, str, int, int]  # uri, version, action, start, end


def _key(document: Document, target: Target) -> FixKey:
    return document.uri, document.version, target.action.name, target.start, target.end


@attrs.frozen
class Pending:
    """An action offered without its edit: its `data`, what codeAction/resolve needs to compute the edit."""

    uri: str
    version: int  # the document version the action was offered for: the only one its edit may be for
    action: str  # Action.name
    range: types.Range  # the target, in the negotiated position encoding

    def data(self) -> dict:
        return _converter.unstructure(self)

    @classmethod
    def of(cls, data: object) -> Pending:
        try:
            pending = _converter.structure(data, cls)
        except BaseValidationError as error:
            raise JsonRpcInvalidParams(
                "codeAction/resolve: not an action of this server: " + "; ".join(transform_error(error))
            ) from None
        if pending.action not in ACTIONS:
            raise JsonRpcInvalidParams(f"codeAction/resolve: unknown action {pending.action!r}")
        return pending


class FixResults(Lru[FixKey, FixResult]):
    """The latest fix results, so that a client asking again for the same place of the same
    version (editors ask at every cursor move) is answered without running the model again.
    Cleared when another model or other settings would compute other results."""

    def __init__(self, size: int = 32):
        super().__init__(size)

    def forget(self, uri: str) -> None:
        """The document was opened or closed: a reopened one starts again at version 1, with other text."""
        self.forget_where(lambda key: key[0] == uri)


def _looks_like_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")


def _json_action(document: Document) -> Action:
    return JSONC if document.language_id in JSONC_LANGUAGES else JSON


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


def _offsets(document: Document, where: types.Range, encoding: str) -> tuple[int, int]:
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
    start, end = _offsets(document, params.range, encoding)
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


def _range(document: Document, target: Target, encoding: str) -> types.Range:
    lines = document.lines
    return types.Range(lines.position(target.start, encoding), lines.position(target.end, encoding))


def code_action(document: Document, target: Target, result: FixResult, encoding: str) -> types.CodeAction:
    """The action for one target: an edit of the target's range, or disabled with the reason."""
    title, kind, diagnostics = target.action.title, target.action.kind, list(target.diagnostics) or None
    if not result.fixed:
        return types.CodeAction(
            title=title,
            kind=kind,
            diagnostics=diagnostics,
            disabled=types.CodeActionDisabled(reason=result.reason or "no valid fix"),
        )
    edit = types.TextEdit(range=_range(document, target, encoding), new_text=result.text)
    change = types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=document.uri, version=document.version),
        edits=[edit],
    )
    return types.CodeAction(
        title=title,
        kind=kind,
        diagnostics=diagnostics,
        is_preferred=kind == QUICKFIX or None,
        edit=types.WorkspaceEdit(document_changes=[change]),
    )


def unresolved(document: Document, target: Target, encoding: str) -> types.CodeAction:
    """The action for one target without its edit, which codeAction/resolve computes when the user picks it."""
    pending = Pending(document.uri, document.version, target.action.name, _range(document, target, encoding))
    return types.CodeAction(
        title=target.action.title,
        kind=target.action.kind,
        diagnostics=list(target.diagnostics) or None,
        data=pending.data(),
    )


def deferred(document: Document, target: Target, encoding: str) -> types.CodeAction:
    """The action for one target as a command that computes and applies its edit when the user picks it
    (FIX_COMMAND), for a client that cannot resolve one."""
    pending = Pending(document.uri, document.version, target.action.name, _range(document, target, encoding))
    title = f"{target.action.title} (runs when chosen)"
    return types.CodeAction(
        title=title,
        kind=target.action.kind,
        diagnostics=list(target.diagnostics) or None,
        command=types.Command(title=title, command=FIX_COMMAND, arguments=[pending.data()]),
    )


def _snapshot(ls, uri: str) -> Document:
    """A copy of the open document: an answer must describe the version asked about, even if it changes meanwhile."""
    try:
        document = ls.documents.get(uri)
    except UnknownDocument as error:
        raise JsonRpcInvalidParams(str(error)) from None
    return dataclasses.replace(document)


async def _fix(ls, document: Document, target: Target) -> FixResult:
    """The target's fix: the kept result, else computed in the repairs process or, with the model, on the
    engine thread (the loop only awaits it). Stopped when a change of the document or a newer fix stops it."""
    key = _key(document, target)
    result = ls.fixes.get(key)
    if result is None:
        result = await _computed(ls, document, target)
        ls.fixes.put(key, result)
    return result


async def _computed(ls, document: Document, target: Target) -> FixResult:
    around, run = surroundings(document, target), target.action.run
    if not target.action.model:
        return await ls.repairs.run(document.uri, Asked(run, document.text.pieces, target.start, target.end, around))
    selected = document.text[target.start : target.end]
    return await asyncio.wrap_future(ls.worker.fix(lambda fixer: run(fixer, selected, around)))


async def code_actions(ls, params: types.CodeActionParams) -> list[types.CodeAction]:
    """textDocument/codeAction: the fixes and the rewrite the selection and diagnostics call for."""
    snapshot = _snapshot(ls, params.text_document.uri)
    if not snapshot.in_sync:  # the user was told when it was lost track of
        return []
    encoding, support = ls.encoding, Support.of(ls.client_capabilities)
    actions, withheld = [], []
    for target in targets(snapshot, params, encoding):
        if ls.fixes.get(_key(snapshot, target)) is None:  # the repair waits until the user picks it
            if support.resolve:
                actions.append(unresolved(snapshot, target, encoding))
                continue
            if support.apply_edit and target.end - target.start > EAGER_MAX_CHARS:
                actions.append(deferred(snapshot, target, encoding))
                continue
        try:
            result = await _fix(ls, snapshot, target)
        except Stopped:  # the document changed, or a newer request asks: this answer is stale
            return []
        if result.fixed or support.disabled:
            actions.append(code_action(snapshot, target, result, encoding))
        else:  # a client that cannot show a disabled action would offer it as if it worked
            withheld.append(f"{target.action.title}: {result.reason}")
    if withheld:
        _explain(ls, params.context.trigger_kind, withheld)
    return actions


def _explain(ls, trigger: types.CodeActionTriggerKind | None, withheld: list[str]) -> None:
    """Why actions were left out, for a client that cannot show disabled ones: a message when the user asked
    for code actions, the client's log when the editor asked by itself (it does at every cursor move)."""
    message = "diffusion-infill: " + "; ".join(dict.fromkeys(withheld))
    if trigger == types.CodeActionTriggerKind.Invoked:
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Info, message=message))
    else:
        ls.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=message))


def _unchanged(ls, pending: Pending) -> Document:
    """The document as it was when the action was offered; RequestFailed when it has changed or closed since."""
    try:
        document = _snapshot(ls, pending.uri)
    except JsonRpcInvalidParams:
        raise RequestFailed("the document was closed since this action was offered") from None
    if document.version != pending.version:
        raise RequestFailed("the document changed since this action was offered: ask for code actions again")
    if not document.in_sync:
        raise RequestFailed("the server lost track of the document's text: reopen it")
    return document


async def _pending_fix(ls, pending: Pending, diagnostics: list[types.Diagnostic] | None) -> types.CodeAction:
    """The fixed action for an action offered without its edit, for the version it was offered for;
    RequestFailed when the document changed since or meanwhile, or there is no valid fix."""
    document = _unchanged(ls, pending)
    start, end = _offsets(document, pending.range, ls.encoding)
    target = Target(ACTIONS[pending.action], start, end, tuple(diagnostics or ()))
    try:
        result = await _fix(ls, document, target)
    except Stopped as stopped:
        _unchanged(ls, pending)  # the usual reason: the document changed
        raise RequestFailed(f"{target.action.title}: stopped: {stopped}") from None
    _unchanged(ls, pending)  # an edit made while the repair ran would make this one stale
    if not result.fixed:
        raise RequestFailed(f"{target.action.title}: {result.reason}")
    return code_action(document, target, result, ls.encoding)


async def resolve(ls, action: types.CodeAction) -> types.CodeAction:
    """codeAction/resolve: the edit of an action offered without one, for the version it was offered for."""
    return await _pending_fix(ls, Pending.of(action.data), action.diagnostics)


async def run_fix(ls, data: Any) -> None:
    """FIX_COMMAND: the repair of an action offered as a command, applied with workspace/applyEdit."""
    action = await _pending_fix(ls, Pending.of(data), None)
    applied = await ls.workspace_apply_edit_async(types.ApplyWorkspaceEditParams(edit=action.edit, label=action.title))
    if not applied.applied:
        why = applied.failure_reason or "no reason given"
        raise RequestFailed(f"{action.title}: the editor did not apply the edit: {why}")
