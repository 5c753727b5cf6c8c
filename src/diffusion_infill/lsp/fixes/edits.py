"""Code actions as the protocol carries them: a fixed target as a versioned WorkspaceEdit of exactly its range
(or disabled with the reason), and an action offered without its edit, whose `data` (Pending) names the
target and the document version the edit may only be computed for: resolved later (codeAction/resolve) or
run as a command (FIX_COMMAND) by a client that cannot resolve; what the client's capabilities allow."""

from __future__ import annotations

from dataclasses import dataclass

import attrs
from cattrs import transform_error
from cattrs.errors import BaseValidationError
from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcInvalidParams

from diffusion_infill.engine.repair import jsonfix
from diffusion_infill.engine.repair.fixes import FixResult
from diffusion_infill.lsp.fixes.targets import ACTIONS, QUICKFIX, Target
from diffusion_infill.lsp.text.documents import Document

FIX_COMMAND = "diffusionInfill.fix"  # runs an action offered without its edit, for clients that cannot resolve
_converter = get_converter()


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


def _range(document: Document, target: Target, encoding: str) -> types.Range:
    lines = document.lines
    return types.Range(lines.position(target.start, encoding), lines.position(target.end, encoding))


def _dropped(count: int) -> str:
    return "" if not count else f" (drops {count} comment{'s' if count > 1 else ''})"


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
    if target.action.name == "json":  # JSON holds no comments: the title says how many the fix dropped
        title += _dropped(jsonfix.dropped_comments(document.text[target.start : target.end], result.text))
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
