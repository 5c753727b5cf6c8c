"""`serve --worker-timeout`: a diagnostics process that stops answering is replaced and the document is
checked again, so its diagnostics still arrive (lsp.diagnostics.publisher, lsp.diagnostics.process).

Through the real server: the diagnostics process is held still with SIGSTOP, as a hung or swapping one would be.
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from lsprotocol import types
from processes import appears, running, workers

from tests.lsp.action_client import open_diagnosed, published_after, start_for_actions
from tests.lsp.lsp_client import Editor, stop

pytestmark = pytest.mark.asyncio(loop_scope="module")
BOUND_S = 3  # --worker-timeout
LATE_S = 15  # past the bound, on a loaded 2-core machine: an answer later than this is no answer
BROKEN = '{"name": "demo", "tags": ["a", "b",]\n'


@pytest.fixture(scope="module")
async def session(model_dir, tmp_path_factory):
    telemetry = tmp_path_factory.mktemp("t") / "a.json"
    client = await start_for_actions(model_dir, telemetry, True, True, "--worker-timeout", str(BOUND_S))
    yield client
    await stop(client)


async def test_a_stopped_diagnostics_process_is_replaced_and_the_edit_is_still_diagnosed(session):
    editor = Editor(session)
    server = session._server.pid
    uri, first = await open_diagnosed(editor, BROKEN, "json", ".json")
    assert first
    (stopped,) = await appears(lambda: workers(server), 30)  # no repairs asked: the diagnostics process alone
    os.kill(stopped, signal.SIGSTOP)
    try:

        def edit() -> str:
            editor.insert(uri, types.Position(0, 1), " ")
            return uri

        published = await asyncio.wait_for(published_after(editor, edit), BOUND_S + LATE_S)
    finally:
        if running(stopped):
            os.kill(stopped, signal.SIGCONT)
    assert published.version == 2 and [d.message for d in published.diagnostics] == [d.message for d in first]
    assert await appears(lambda: not running(stopped), 10), "the stopped diagnostics process was not ended"
    assert await appears(lambda: workers(server) - {stopped}, 10), "no new diagnostics process"
