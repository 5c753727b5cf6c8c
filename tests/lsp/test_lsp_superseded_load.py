"""A model load that settings replaced before it ended says nothing of how it ended: the load that
replaced it is the one whose state the editor shows. Through the real server: the second load is
asked for right after `initialized`, while the first is still importing torch (seconds), so the
first always ends superseded; each test checks that it did (two "loading" before any other state).
"""

from __future__ import annotations

import asyncio

import pytest
from commands import serve_command
from lsprotocol import types

from tests.lsp.lsp_client import Editor, capabilities, start, stop

pytestmark = pytest.mark.asyncio

LOAD_TIMEOUT = 120  # seconds; a server that never says it is ready fails instead of hanging


def load(client, model) -> None:
    """Settings that name another model: the server loads it, superseding the load under way."""
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"diffusionInfill": {"model": str(model), "maxSteps": 2}})
    )


async def ready_with(client, model) -> None:
    """Waits for the "ready" of `model`, then for a completion: answered only once every load before it has
    ended (one engine thread), so whatever the loads had to say has been said."""
    ready = client.statuses.first(lambda status: status.state == "ready" and str(model) in status.message)
    await asyncio.wait_for(ready, LOAD_TIMEOUT)
    editor = Editor(client)
    uri = editor.open("x = 1\n")
    await editor.request(uri, editor.end_of(uri, "x = "), invoked=True)


def states(client) -> list[str]:
    return [status.state for status in client.statuses.drafts]


async def test_a_superseded_load_publishes_no_ready(model_dir, tiny_model_dir, tmp_path):
    client, _ = await start(serve_command(model_dir, tmp_path / "t.json"), capabilities(["utf-16"]))
    try:
        load(client, tiny_model_dir)
        await ready_with(client, tiny_model_dir)
        assert states(client) == ["loading", "loading", "ready"]  # none for the embedded model's load
    finally:
        await stop(client)


async def test_a_superseded_load_that_fails_shows_no_error(tiny_model_dir, tmp_path):
    missing = tmp_path / "no-such-model"
    options = {"diffusionInfill": {"model": str(missing)}}  # not checked on the command line: it fails loading
    client, _ = await start(serve_command(None, tmp_path / "t.json"), capabilities(["utf-16"]), options)
    try:
        load(client, tiny_model_dir)
        await ready_with(client, tiny_model_dir)
        assert states(client) == ["loading", "loading", "ready"]
        errors = [m.message for m in client.messages + client.log_messages if m.type == types.MessageType.Error]
        assert errors == [], "the load nobody waits for any more told the user it failed"
    finally:
        await stop(client)
