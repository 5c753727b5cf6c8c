"""A document whose change cannot be applied: marked out of sync, nothing computed from it until
the editor sends its whole text again (or reopens it), the user told once."""

from __future__ import annotations

import json

import pytest
from commands import serve_command
from lsprotocol import types
from lsprotocol.types import Position, Range, TextDocumentContentChangePartial, TextDocumentContentChangeWholeDocument

from diffusion_infill.lsp.text.documents import Documents, OutOfSync
from diffusion_infill.lsp.text.positions import UTF16
from tests.lsp.action_client import (
    FIX_JSON,
    action_capabilities,
    applied,
    code_actions,
    open_diagnosed,
    published_after,
    titled,
)
from tests.lsp.lsp_client import Editor, start, stop

URI = "file:///drift.json"
INSIDE_THE_EMOJI = Position(0, 3)  # '["' is 2 units, the emoji 2 more: 3 falls between its halves


def _partial(at: Position, text: str) -> TextDocumentContentChangePartial:
    return TextDocumentContentChangePartial(range=Range(at, at), text=text)


def lost(client) -> list[str]:
    return [message.message for message in client.messages if "lost track of" in message.message]


def test_a_change_that_names_no_place_marks_the_document_out_of_sync_until_the_whole_text_comes():
    documents = Documents()
    documents.open(URI, "json", 1, '["😀", 1,')
    with pytest.raises(OutOfSync):
        documents.change(URI, 2, [_partial(INSIDE_THE_EMOJI, "x")], UTF16)
    document = documents.get(URI)
    assert (document.version, document.in_sync) == (2, False)
    documents.change(URI, 3, [_partial(Position(0, 9), " 2]")], UTF16)  # applies cleanly to the stale text
    assert (document.version, document.in_sync) == (3, False)  # and is not applied: raised only once
    documents.change(
        URI,
        4,
        [
            _partial(Position(0, 0), "junk"),
            TextDocumentContentChangeWholeDocument(text='["x"'),
            _partial(Position(0, 4), "]"),
        ],
        UTF16,
    )
    assert (document.version, document.in_sync, str(document.text)) == (4, True, '["x"]')


def test_a_change_at_the_line_after_the_last_appends_and_one_further_on_marks_the_document_out_of_sync():
    documents = Documents()
    documents.open(URI, "json", 1, "[1,\n 2,\n 3")
    documents.change(URI, 2, [_partial(Position(3, 0), "]")], UTF16)  # the line right after the last: the end
    assert str(documents.get(URI).text) == "[1,\n 2,\n 3]"
    with pytest.raises(OutOfSync):  # line 40 of a 3-line document: no place, not the end
        documents.change(URI, 3, [_partial(Position(40, 0), "4")], UTF16)
    document = documents.get(URI)
    assert (document.in_sync, str(document.text)) == (False, "[1,\n 2,\n 3]")


def test_reopening_brings_the_document_back():
    documents = Documents()
    documents.open(URI, "json", 1, '["😀"]')
    with pytest.raises(OutOfSync):
        documents.change(URI, 2, [_partial(INSIDE_THE_EMOJI, "x")], UTF16)
    assert documents.open(URI, "json", 1, "[]").in_sync


async def test_after_a_lost_change_no_edit_is_offered_until_the_editor_sends_the_whole_text(tmp_path):
    eager = action_capabilities(resolve=False, disabled=True)  # edits come with the actions
    client, _ = await start(
        serve_command(None, tmp_path / "t.json"), eager, {"diffusionInfill": {"model": str(tmp_path / "no-such-model")}}
    )
    try:
        editor = Editor(client)
        text = '["😀", 1,'
        uri, diagnostics = await open_diagnosed(editor, text, "json", ".json")
        assert diagnostics

        def lose_track_then_type() -> str:
            editor.versions[uri] += 1  # a change the server cannot apply; the editor's text has it
            identifier = types.VersionedTextDocumentIdentifier(uri=uri, version=editor.versions[uri])
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(identifier, [_partial(INSIDE_THE_EMOJI, "x")])
            )
            editor.texts[uri] = '["x😀", 1,'
            editor.insert(uri, Position(0, 10), " 2")  # a change that would apply to the server's stale copy
            return uri

        cleared = await published_after(editor, lose_track_then_type)
        assert not cleared.diagnostics
        assert not await code_actions(editor, uri, diagnostics[0].range, diagnostics)
        assert len(lost(client)) == 1
        completion = await client.text_document_inline_completion_async(
            types.InlineCompletionParams(
                context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Invoked),
                text_document=types.TextDocumentIdentifier(uri),
                position=Position(0, 2),
            )
        )
        assert not completion

        def send_the_whole_text() -> str:
            editor.versions[uri] += 1
            client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(uri=uri, version=editor.versions[uri]),
                    [TextDocumentContentChangeWholeDocument(text=editor.texts[uri])],
                )
            )
            return uri

        diagnosed = await published_after(editor, send_the_whole_text)
        assert diagnosed.diagnostics
        actions = await code_actions(editor, uri, diagnosed.diagnostics[0].range, diagnosed.diagnostics)
        fixed, _ = applied(editor.texts[uri], titled(actions, FIX_JSON), uri, editor.versions[uri])
        assert json.loads(fixed) == ["x😀", 1, 2]
        assert len(lost(client)) == 1
    finally:
        await stop(client)
