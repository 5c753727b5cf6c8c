"""positionEncoding negotiation: utf-8 and utf-32 when the client offers them, counted right
on a line with emoji and CJK (each test starts its own server: capabilities are fixed at start).
The engine is scripted (openai_servers.ScriptedServer), so every request gets an item whose
range the server computed."""

from __future__ import annotations

import pytest
from commands import serve_command
from lsprotocol import types
from openai_servers import ScriptedServer
from pygls.exceptions import JsonRpcException

from tests.lsp.lsp_client import Editor, capabilities, start, stop

pytestmark = pytest.mark.asyncio(loop_scope="function")

LINE = "label = '😀中' + "
REPLY = ", 1"  # what the engine writes at any cursor


@pytest.fixture
def scripted():
    server = ScriptedServer(lambda prefix, suffix: REPLY)
    yield server
    server.close()


@pytest.mark.parametrize(
    ("offered", "negotiated", "end", "cursor", "inside"),
    [
        # 😀 is 4 bytes, 中 3: column 11 is inside 😀; the cursor is after the edit's f('🎉', 8 bytes
        (["utf-8", "utf-16"], "utf-8", 20, 28, 11),
        (["utf-32", "utf-16"], "utf-32", 15, 20, None),  # code points: nothing is inside anything
    ],
)
async def test_negotiated_encoding_counts_columns(scripted, tmp_path, offered, negotiated, end, cursor, inside):
    options = {
        "diffusionInfill": {
            "engine": "openai",
            "url": scripted.url,
            "model": "scripted",
            "promptFormat": "fim",
            "minConfidence": 0,
            "timeout": 120,
        }
    }
    client, result = await start(serve_command(None, tmp_path / "t.json"), capabilities(offered), options)
    try:
        assert result.capabilities.position_encoding == negotiated
        editor = Editor(client)
        uri = editor.open("x = 1\n" + LINE + "\n")
        editor.insert(uri, types.Position(1, end), "f('🎉')", negotiated)  # an edit counted in the same units
        assert editor.texts[uri] == "x = 1\n" + LINE + "f('🎉')\n"
        after = types.Position(1, cursor)  # before the ")"
        [item] = await editor.request(uri, after)
        # The item covers the auto-paired ")": its end is a column the server counted in `negotiated`.
        assert item.range == types.Range(after, types.Position(1, cursor + 1)) and item.insert_text == REPLY + ")"
        [final] = [d for d in client.drafts.of(uri, 2) if d.final]
        assert (final.position.line, final.position.character) == (after.line, after.character)
        if inside is not None:
            with pytest.raises(JsonRpcException):
                await editor.request(uri, types.Position(1, inside))
    finally:
        await stop(client)
