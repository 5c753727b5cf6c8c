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

The handlers are here; which targets a request is offered is lsp.fixes.targets', the actions as the
protocol carries them lsp.fixes.edits', the kept results lsp.fixes.results'.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from diffusion_infill.engine.repair.fixes import FixResult
from diffusion_infill.lsp.fixes.edits import Pending, Support, code_action, deferred, unresolved
from diffusion_infill.lsp.fixes.repairs import Asked, Stopped
from diffusion_infill.lsp.fixes.results import fix_key
from diffusion_infill.lsp.fixes.targets import ACTIONS, Target, offsets, surroundings, targets
from diffusion_infill.lsp.text.documents import Document, UnknownDocument

# Characters. Above this, a client that cannot resolve an edit lazily is offered the action as a command
# (the repair runs when chosen) rather than its edit computed while it asks for the list.
EAGER_MAX_CHARS = 50_000


class RequestFailed(JsonRpcException):
    """LSP's RequestFailed: a valid request the server cannot carry out; the message says why."""

    CODE = types.LSPErrorCodes.RequestFailed.value
    MESSAGE = "Request Failed"


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
    key = fix_key(document, target)
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
        if ls.fixes.get(fix_key(snapshot, target)) is None:  # the repair waits until the user picks it
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
    start, end = offsets(document, pending.range, ls.encoding)
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
