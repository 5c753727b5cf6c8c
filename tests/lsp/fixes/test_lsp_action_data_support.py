"""A client that can resolve an action's edit (`resolveSupport` with `edit`) but does not send an action's
`data` back (no `dataSupport`) could not resolve an action offered without its edit: the server would not
know which target it is. Such a client gets each action with its edit, as one that cannot resolve at all."""

from __future__ import annotations

import json

import pytest
from commands import serve_command

from tests.lsp.action_client import FIX_JSON, action_capabilities, applied, code_actions, open_diagnosed, titled
from tests.lsp.lsp_client import Editor, start, stop

pytestmark = pytest.mark.asyncio

BROKEN = '{\n  name: \'demo\',\n  "tags": ["a", "b",]\n'


async def test_a_client_that_resolves_edits_but_keeps_no_data_gets_each_action_with_its_edit(model_dir, tmp_path):
    caps = action_capabilities(resolve=True, disabled=True)
    caps.text_document.code_action.data_support = False
    client, _ = await start(serve_command(model_dir, tmp_path / "t.json"), caps)
    try:
        editor = Editor(client)
        uri, diagnostics = await open_diagnosed(editor, BROKEN, "json", ".json")
        action = titled(await code_actions(editor, uri, diagnostics[0].range, diagnostics), FIX_JSON)
        assert action.data is None and action.command is None
        fixed, _ = applied(BROKEN, action, uri)
        assert json.loads(fixed) == {"name": "demo", "tags": ["a", "b"]}
    finally:
        await stop(client)
