"""The server's state as editors show it: `infill/status` at each change (loading, then ready or
error, again after a reload), the same lines as `window/logMessage`, and the final `infill/draft`'s
time and confidence for a client's info line."""

from __future__ import annotations

import asyncio

import pytest
from commands import serve_command
from lsprotocol import types

from tests.lsp.lsp_client import Editor, capabilities, start, stop

pytestmark = pytest.mark.asyncio

OPTIONS = {"diffusionInfill": {"maxSteps": 4, "minConfidence": 0}}
LOAD_TIMEOUT = 120  # seconds; a server that never says it is ready fails instead of hanging


async def next_status(client, matches):
    return await asyncio.wait_for(client.statuses.first(matches), LOAD_TIMEOUT)


def states(client) -> list[tuple[str, str, str]]:
    return [(status.state, status.engine, status.model) for status in client.statuses.drafts]


async def test_status_goes_from_loading_to_ready_and_again_after_a_reload(model_dir, tmp_path):
    client, _ = await start(serve_command(model_dir, tmp_path / "t.json"), capabilities(["utf-16"]), OPTIONS)
    try:
        ready = await next_status(client, lambda status: status.state != "loading")
        model = str(model_dir)
        assert states(client) == [("loading", "local", model), ("ready", "local", model)]
        logged = [message.message for message in client.log_messages]
        assert f"ready: {model} (engine local); from {model}" in logged

        editor = Editor(client)
        uri = editor.open("def area(self) -> f\n")
        await editor.request(uri, types.Position(0, 19), invoked=True)
        [final] = [draft for draft in client.drafts.of(uri, 1) if draft.final]
        assert final.step >= 1 and final.ms >= 0 and 0 <= final.confidence <= 1  # the info line's numbers

        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(
                settings={"diffusionInfill": {**OPTIONS["diffusionInfill"], "dtype": "float32"}}
            )
        )  # reloads
        await next_status(client, lambda status: status is not ready and status.state == "ready")
        assert [state for state, _, _ in states(client)] == ["loading", "ready", "loading", "ready"]
    finally:
        await stop(client)


async def test_a_model_that_cannot_load_is_an_error_status_with_the_reason(tmp_path):
    missing = tmp_path / "no-such-model"
    client, _ = await start(
        serve_command(None, tmp_path / "t.json"), capabilities(["utf-16"]), {"diffusionInfill": {"model": str(missing)}}
    )  # serve refuses it on its command line
    try:
        failed = await next_status(client, lambda status: status.state != "loading")
        assert failed.state == "error" and str(missing) in failed.message
        assert states(client) == [("loading", "local", str(missing)), ("error", "local", str(missing))]
        errors = [message for message in client.log_messages if message.type == types.MessageType.Error]
        assert any(str(missing) in message.message for message in errors)
    finally:
        await stop(client)
