"""A run stopped by an edit publishes nothing more: the engine finishes the denoising step it is in before it
looks at the cancel, and that step's draft, handed to the event loop after the edit, must not repaint the
editor with text for a version that is gone. Through the real server on the embedded model."""

from __future__ import annotations

import asyncio

import pytest
from commands import serve_command
from lsprotocol import types

from tests.lsp.lsp_client import Editor, capabilities, start, stop

pytestmark = pytest.mark.asyncio

OPTIONS = {"diffusionInfill": {"maxSteps": 64, "mode": "multi-line", "minConfidence": 0}}  # a run of many steps
TEXT = "def parse(lines):\n    result = {}\n    for line in lines:\n        \n"


def ask(client, uri: str, position: types.Position, answered: list[int]) -> asyncio.Future:
    """An automatic inline completion request; when its answer arrives, `answered` gets the number of
    drafts received by then (in the order the server sent them: the response is handled where it is read)."""
    params = types.InlineCompletionParams(
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
        text_document=types.TextDocumentIdentifier(uri),
        position=position,
    )
    sent = client.protocol.send_request(types.TEXT_DOCUMENT_INLINE_COMPLETION, params)
    sent.add_done_callback(lambda _: answered.append(len(client.drafts.drafts)))
    return asyncio.wrap_future(sent)


async def test_a_run_stopped_by_an_edit_publishes_no_draft_after_its_empty_answer(model_dir, tmp_path):
    client, _ = await start(serve_command(model_dir, tmp_path / "t.json"), capabilities(["utf-16"]), OPTIONS)
    try:
        editor = Editor(client)
        uri = editor.open(TEXT)
        cursor = types.Position(3, 8)
        answered: list[int] = []
        stale = ask(client, uri, cursor, answered)
        await client.drafts.first(lambda draft: draft.uri == uri and not draft.final)  # the engine is mid-run
        editor.insert(uri, cursor, "k")  # stops the run: the request is answered empty at once
        assert await stale == []
        # The next run starts once the engine thread has left the stopped one: by its answer, every draft the
        # stopped run handed over has reached the event loop.
        await editor.request(uri, types.Position(3, 9), invoked=True)
        ours = [draft for draft in client.drafts.drafts[: answered[0]] if draft.uri == uri]
        assert ours and not any(draft.final for draft in ours), "the run ended before the edit stopped it"
        late = [draft for draft in client.drafts.drafts[answered[0] :] if draft.uri == uri and draft.version == 1]
        assert late == [], "a draft of the stopped run was published after the edit"
    finally:
        await stop(client)
