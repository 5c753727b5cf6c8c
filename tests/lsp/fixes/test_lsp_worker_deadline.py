"""`serve --worker-timeout`: a repair that outlives the bound answers codeAction/resolve with an error naming
it, and its worker is replaced, so the next resolve is answered (lsp.diagnostics.process, lsp.fixes.repairs).

Through the real server: the repairs process is held still with SIGSTOP, as a hung or swapping one would be.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal

import pytest
from processes import appears, running, workers
from pygls.exceptions import JsonRpcException

from tests.lsp.action_client import applied, start_for_actions
from tests.lsp.fixes.test_lsp_action_resolve import BROKEN, LAZY, REQUEST_FAILED, offered_fix, resolve
from tests.lsp.lsp_client import Editor, stop

pytestmark = pytest.mark.asyncio(loop_scope="module")
BOUND_S = 3  # --worker-timeout
LATE_S = 15  # past the bound, on a loaded 2-core machine: an answer later than this is no answer


@pytest.fixture(scope="module")
async def session(model_dir, tmp_path_factory):
    telemetry = tmp_path_factory.mktemp("t") / "a.json"
    client = await start_for_actions(
        model_dir, telemetry, LAZY["resolve"], LAZY["disabled"], "--worker-timeout", str(BOUND_S)
    )
    yield client
    await stop(client)


async def test_a_stopped_repairs_process_fails_the_resolve_naming_the_bound_and_is_replaced(session):
    editor = Editor(session)
    server = session._server.pid
    uri, action = await offered_fix(editor, BROKEN)  # the diagnostics process runs from here on
    diagnostics = workers(server)
    await resolve(editor, action)  # starts the repairs process: its start-up is not bounded
    repairs = await appears(lambda: workers(server) - diagnostics, 30)
    assert len(repairs) == 1, "no repairs process beside the diagnostics one"
    (stopped,) = repairs
    os.kill(stopped, signal.SIGSTOP)
    try:
        other = BROKEN.replace("demo", "held")
        uri, action = await offered_fix(editor, other)
        with pytest.raises(JsonRpcException) as failure:
            await asyncio.wait_for(resolve(editor, action), BOUND_S + LATE_S)
    finally:
        if running(stopped):
            os.kill(stopped, signal.SIGCONT)
    assert failure.value.code == REQUEST_FAILED
    assert f"within {BOUND_S} s" in failure.value.message and "repairs process" in failure.value.message
    assert await appears(lambda: not running(stopped), 10), "the stopped repairs process was not ended"
    fixed, _ = applied(other, await asyncio.wait_for(resolve(editor, action), BOUND_S + LATE_S), uri)
    assert json.loads(fixed) == {"name": "held", "tags": ["a", "b"]}  # from a fresh repairs process
    assert workers(server) - diagnostics - {stopped}
