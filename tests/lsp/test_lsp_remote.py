"""The server with `--engine openai`: completions from a real `transformers serve`, a URL with
nothing listening (answered empty, told once), a server that never answers (timeouts, and a
stale run's HTTP request closed), code actions through the same server, the settings that
choose the engine."""

from __future__ import annotations

import asyncio
import time

import pytest
from commands import serve_command
from lsprotocol import types
from openai_servers import FaultyServer, SilentServer, events, free_port

from diffusion_infill.engine.remote.client import RemoteEngine
from diffusion_infill.engine.remote.settings import RemoteSettings
from diffusion_infill.engine.requests import InfillRequest
from diffusion_infill.lsp.settings import ServerSettings, merge, section_of
from tests.lsp.action_client import REGENERATE, action_capabilities, code_actions, span
from tests.lsp.lsp_client import Editor, apply, capabilities, start, stop

PATIENT = "120"  # seconds: the success cases must not time out on a busy machine
PREFIX = "import os\n\n\ndef main():\n    path = os.path.abspath("
TEXT = PREFIX + "\n"


def remote_command(url: str, model: str, telemetry, *extra: str) -> list[str]:
    return serve_command(model, telemetry, "--engine", "openai", "--url", url, *extra)


@pytest.mark.asyncio
async def test_completions_come_from_the_server(openai_server, tmp_path):
    command = remote_command(
        openai_server.url,
        openai_server.fim_model,
        tmp_path / "t.json",
        "--timeout",
        PATIENT,
        "--invoked-timeout",
        PATIENT,
    )
    client, _ = await start(command, action_capabilities(resolve=False, disabled=True))
    try:
        editor = Editor(client)
        uri = editor.open(TEXT)
        position = editor.end_of(uri, "os.path.abspath(")
        result = await editor.request(uri, position, invoked=True)
        engine = RemoteEngine(RemoteSettings(openai_server.url, openai_server.fim_model, invoked_timeout=120))
        expected = list(engine.complete(InfillRequest(PREFIX, "\n", "python", invoked=True)))[-1].text
        engine.close()
        assert expected and [apply(TEXT, item) for item in result] == [PREFIX + expected + "\n"]
        finals = [d for d in client.drafts.of(uri, 1) if d.final]
        assert finals and finals[-1].text == expected
        # code actions: the same engine
        [regenerate] = await code_actions(editor, uri, span(TEXT, "path = os.path.abspath("))
        assert regenerate.title == REGENERATE
        reason = regenerate.disabled.reason if regenerate.disabled else ""
        assert "cannot regenerate" not in reason and "failed" not in reason  # the server answered
        assert not client.messages
    finally:
        await stop(client)


@pytest.mark.asyncio
async def test_nothing_listening_is_answered_empty_and_told_once(tmp_path):
    url = f"http://127.0.0.1:{free_port()}/v1"
    options = {"diffusionInfill": {"engine": "openai", "url": url, "model": "served-name"}}
    client, _ = await start(serve_command(None, tmp_path / "t.json"), capabilities(["utf-16"]), options)
    try:
        editor = Editor(client)
        uri = editor.open("x = \n")
        for character in range(3):  # typing: automatic requests, one per keystroke
            editor.insert(uri, types.Position(0, 4 + character), "a")
            assert await editor.request(uri, types.Position(0, 5 + character)) == []
        assert await editor.request(uri, types.Position(0, 7), invoked=True) == []
        [message] = client.messages
        assert message.type == types.MessageType.Error and url in message.message
        # infill/status: an error naming the served model and its URL, once, as the message
        assert [(s.state, s.engine, s.model) for s in client.statuses.drafts] == [
            ("loading", "openai", "served-name"),
            ("error", "openai", "served-name"),
        ]
        assert url in client.statuses.drafts[-1].message
    finally:
        await stop(client)


@pytest.mark.asyncio
async def test_a_server_that_never_answers_times_out_and_stale_requests_are_closed(tmp_path):
    silent = SilentServer()
    command = remote_command(
        silent.url, "m", tmp_path / "t.json", "--prompt-format", "fim", "--timeout", "0.3", "--invoked-timeout", PATIENT
    )
    client, _ = await start(command, capabilities(["utf-16"]))
    try:
        editor = Editor(client)
        uri = editor.open("x = \n")
        assert await editor.request(uri, types.Position(0, 4)) == []  # as-you-type: timed out, nothing shown
        assert await asyncio.to_thread(silent.next_request, float(PATIENT)) and not client.messages
        pending = editor.request(uri, types.Position(0, 4), invoked=True)  # waits up to PATIENT seconds
        request = await asyncio.to_thread(silent.next_request, float(PATIENT))
        editor.insert(uri, types.Position(0, 4), "1")  # the run is stale now
        assert await pending == []
        assert await asyncio.to_thread(request.closed_by_client.wait, float(PATIENT))
        assert not client.messages
    finally:
        await stop(client)
        silent.close()


def test_settings_choose_the_engine_and_its_server():
    section = section_of(
        {
            "diffusionInfill": {
                "engine": "openai",
                "url": "http://gpu:8000/v1",
                "model": "dg",
                "promptFormat": "diffusion",
                "timeout": 0.5,
                "invokedTimeout": 0,
            }
        }
    )
    settings, problems = merge(ServerSettings(), section)
    # invokedTimeout 0 is out of its range (docs/protocol.md): clamped to the smallest bound, with one message
    expected = RemoteSettings("http://gpu:8000/v1", "dg", "diffusion", timeout=0.5, invoked_timeout=0.01)
    assert settings.remote_settings() == expected
    assert len(problems) == 1 and "invokedTimeout" in problems[0]
    assert ServerSettings().remote_settings() is None  # the default stays the in-process engine
    settings, problems = merge(ServerSettings(), {"engine": "vllm", "promptFormat": "infill"})
    assert settings.engine == "local" and len(problems) == 2
    assert settings.model_key() != merge(settings, {"engine": "openai", "url": "http://x/v1"})[0].model_key()


@pytest.mark.asyncio
async def test_the_api_key_goes_only_to_the_url_it_was_configured_for(tmp_path, monkeypatch):
    """A client that names its own URL gets no key; the command line's URL gets it. Both servers are
    real listeners on loopback, and each sees the server's probe as it arrives."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-users-key")  # the server inherits the environment
    monkeypatch.delenv("DIFFUSION_INFILL_API_KEY", raising=False)
    monkeypatch.delenv("DIFFUSION_INFILL_API_URL", raising=False)
    configured, elsewhere = SilentServer(), SilentServer()
    options = {"diffusionInfill": {"engine": "openai", "url": elsewhere.url, "model": "m"}}
    client, _ = await start(remote_command(configured.url, "m", tmp_path / "t.json"), capabilities(["utf-16"]), options)
    try:
        probe = await asyncio.to_thread(elsewhere.next_request, float(PATIENT))
        assert probe.head.startswith(b"POST /v1/") and probe.header("Authorization") is None
        settings = {"diffusionInfill": {"engine": "openai", "url": configured.url, "model": "m"}}
        client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=settings))
        probe = await asyncio.to_thread(configured.next_request, float(PATIENT))
        assert probe.header("Authorization") == "Bearer sk-the-users-key"
    finally:
        await stop(client)
        configured.close()
        elsewhere.close()


@pytest.mark.asyncio
async def test_an_invoked_completion_of_a_slow_server_ends_at_its_timeout_and_is_told_once(tmp_path):
    """Issue 52: a server that answers after 10 s; the invoked timeout (2 s) covers the probe and the stream."""
    slow = FaultyServer(lambda handler: (time.sleep(10), events(handler, ["1"])))
    command = remote_command(slow.url, "m", tmp_path / "t.json", "--prompt-format", "fim", "--invoked-timeout", "2")
    client, _ = await start(command, capabilities(["utf-16"]))
    try:
        editor = Editor(client)
        uri = editor.open("x = \n")
        assert await editor.request(uri, types.Position(0, 4), invoked=True) == []  # the first waits for the start
        started = time.monotonic()
        assert await editor.request(uri, types.Position(0, 5), invoked=True) == []
        assert time.monotonic() - started < 2 + 1
        [message] = client.messages  # once, not at every completion
        assert slow.url in message.message and "did not answer within 2 s" in message.message
    finally:
        await stop(client)
        slow.close()
