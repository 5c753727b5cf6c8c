"""Asking the real server for code actions and applying them as an editor would."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from commands import serve_command
from lsprotocol import types

from diffusion_infill.lsp.text.positions import Lines
from tests.lsp.lsp_client import Editor, capabilities, start

FIX_JSON, FIX_MARKDOWN, REGENERATE = "Fix JSON selection", "Fix Markdown selection", "Regenerate selection"
COMPLETE_TABLE = "Complete table"
PUBLISH = types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS


def action_capabilities(resolve: bool, disabled: bool) -> types.ClientCapabilities:
    """Neovim's capabilities (utf-16), with or without lazy edits (codeAction/resolve) and disabled actions."""
    caps = capabilities(["utf-16"])
    code_action = caps.text_document.code_action
    assert code_action.data_support and "edit" in code_action.resolve_support.properties  # Neovim resolves edits
    if not resolve:
        code_action.resolve_support = None
    code_action.disabled_support = disabled
    return caps


async def start_for_actions(model_dir, document, resolve: bool, disabled: bool, *extra: str):
    """The real server on `model_dir` (with `extra` serve options), initialized by a client with
    `action_capabilities`; the client keeps the server's answer to initialize as `initialize_result`."""
    command = serve_command(model_dir, document, *extra)
    client, result = await start(command, action_capabilities(resolve, disabled))
    client.initialize_result = result
    return client


async def published_after(editor: Editor, act: Callable[[], str]) -> types.PublishDiagnosticsParams:
    """Does `act`, which returns the URI it touched, and returns the next diagnostics published for it.

    Publications for other documents (those of earlier tests, late or on close) are passed
    over; the watch is renewed inside the notification's own callback, so none slips past.
    """
    loop = asyncio.get_running_loop()
    ours, touched = loop.create_future(), []

    def watch() -> None:
        editor.client.protocol.wait_for_notification(PUBLISH, callback=check)

    def check(params: types.PublishDiagnosticsParams) -> None:
        if params.uri in touched:
            loop.call_soon_threadsafe(ours.set_result, params)
        else:
            watch()

    watch()  # before acting: what the act causes cannot arrive earlier
    touched.append(act())
    return await ours


async def open_diagnosed(editor: Editor, text: str, language: str, suffix: str) -> tuple[str, list]:
    """Opens a document and returns its URI and the diagnostics published for it."""
    params = await published_after(editor, lambda: editor.open(text, language, suffix))
    assert params.version == 1
    return params.uri, list(params.diagnostics)


def span(text: str, part: str) -> types.Range:
    """The range of the first occurrence of `part` in `text`."""
    lines, start = Lines(text), text.index(part)
    return types.Range(lines.position(start, "utf-16"), lines.position(start + len(part), "utf-16"))


async def code_actions(
    editor: Editor,
    uri: str,
    where: types.Range,
    diagnostics=(),
    only=None,
    trigger: types.CodeActionTriggerKind | None = None,
):
    context = types.CodeActionContext(diagnostics=list(diagnostics), only=only, trigger_kind=trigger)
    params = types.CodeActionParams(text_document=types.TextDocumentIdentifier(uri), range=where, context=context)
    return await editor.client.text_document_code_action_async(params)


def titled(actions, title: str) -> types.CodeAction:
    [action] = [action for action in actions if action.title == title]
    return action


def applied(text: str, action: types.CodeAction, uri: str, version: int = 1) -> tuple[str, types.TextEdit]:
    """The document after applying the action's one edit; checks the edit names the document version."""
    [change] = action.edit.document_changes
    assert change.text_document.uri == uri and change.text_document.version == version
    [edit] = change.edits
    lines = Lines(text)
    start, end = lines.offset(edit.range.start, "utf-16"), lines.offset(edit.range.end, "utf-16")
    return text[:start] + edit.new_text + text[end:], edit
