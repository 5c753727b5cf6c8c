"""positionEncoding negotiation: utf-8 and utf-32 when the client offers them, counted right
on a line with emoji and CJK (each test starts its own server: capabilities are fixed at start)."""

from __future__ import annotations

import pytest
from commands import serve_command
from lsp_client import Editor, capabilities, start, stop
from lsprotocol import types
from pygls.exceptions import JsonRpcException

pytestmark = pytest.mark.asyncio(loop_scope="function")

OPTIONS = {"diffusionInfill": {"maxSteps": 4}}
LINE = "label = '😀中' + "


@pytest.mark.parametrize(("offered", "negotiated", "end", "inside"), [
    (["utf-8", "utf-16"], "utf-8", 20, 11),  # 😀 is 4 bytes, 中 3: column 11 is inside 😀
    (["utf-32", "utf-16"], "utf-32", 15, None),  # code points: nothing is inside anything
])
async def test_negotiated_encoding_counts_columns(model_dir, tmp_path, offered, negotiated, end, inside):
    client, result = await start(serve_command(model_dir, tmp_path / "t.json"), capabilities(offered), OPTIONS)
    try:
        assert result.capabilities.position_encoding == negotiated
        editor = Editor(client)
        uri = editor.open("x = 1\n" + LINE + "\n")
        assert editor.end_of(uri, "' + ", negotiated) == types.Position(1, end)
        editor.insert(uri, types.Position(1, end), "'🎉'", negotiated)  # an edit counted in the same units
        after = editor.end_of(uri, "'🎉'", negotiated)
        answer = await editor.request(uri, after)
        assert all(item.range.start == after for item in answer)
        [final] = [d for d in client.drafts.of(uri, 2) if d.final]
        assert (final.position.line, final.position.character) == (after.line, after.character)
        if inside is not None:
            with pytest.raises(JsonRpcException):
                await editor.request(uri, types.Position(1, inside))
    finally:
        await stop(client)
