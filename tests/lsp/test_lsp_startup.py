"""Start-up and shut-down paths: requests before initialize and after shutdown, what is answered
before the model stack is imported, a model that cannot load (reported, and the server keeps
answering), and the TCP transport."""

from __future__ import annotations

import asyncio
import re
import shutil
import sys

import pytest
from commands import CLI, serve_command
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from samples import RESETTING  # `self.items` is followed by ` = []` twice

from tests.lsp.lsp_client import MODEL_PATH, Editor, capabilities, recording_client, send_raw, stop

SERVER_NOT_INITIALIZED, INVALID_REQUEST = -32002, -32600
HANG_TIMEOUT = 120  # seconds; a server that waits for the held import fails instead of hanging

# The CLI in a process whose imports of torch and transformers wait until the file GATE exists:
# whatever is answered before then did not need them. The first thread to ask for them is
# written to the file ASKED.
HELD_MODEL_STACK = """
import os, runpy, sys, threading, time
gate, asked = sys.argv.pop(1), sys.argv.pop(1)

class HeldModelStack:
    def find_spec(self, name, path=None, target=None):
        if name in ("torch", "transformers"):
            if not os.path.exists(asked):
                with open(asked, "w") as file:
                    file.write(threading.current_thread().name)
            while not os.path.exists(gate):
                time.sleep(0.01)
        return None  # the usual finders import it

sys.meta_path.insert(0, HeldModelStack())
runpy.run_module("diffusion_infill.cli.main", run_name="__main__", alter_sys=True)
"""


@pytest.mark.asyncio
async def test_initialize_and_a_document_draft_are_answered_before_the_model_stack_is_imported(tmp_path):
    """The first key typed gets the document's draft while torch is still to come; the engine thread
    imports the model stack, and the model is ready once it may."""
    gate, asked = tmp_path / "gate", tmp_path / "asked"
    serve = serve_command(None, tmp_path / "t.json")[len(CLI) :]
    client = recording_client()
    await client.start_io(sys.executable, "-c", HELD_MODEL_STACK, str(gate), str(asked), *serve)
    try:
        options = {"diffusionInfill": {"documentDrafts": True, "quietAfter": None}}  # the defaults
        await asyncio.wait_for(
            client.initialize_session(
                types.InitializeParams(capabilities=capabilities(["utf-16"]), initialization_options=options)
            ),
            HANG_TIMEOUT,
        )
        editor = Editor(client)
        uri = editor.open(RESETTING + "\n")
        [item] = await asyncio.wait_for(editor.request(uri, editor.end_of(uri, RESETTING)), HANG_TIMEOUT)
        assert item.insert_text == " = []"
        [final] = [draft for draft in client.drafts.of(uri, 1) if draft.final]
        assert (final.step, final.source) == (0, "document")
        assert all(status.state == "loading" for status in client.statuses.drafts)

        gate.touch()
        ready = await asyncio.wait_for(client.statuses.first(lambda status: status.state != "loading"), HANG_TIMEOUT)
        assert ready.state == "ready", ready.message
        assert asked.read_text().startswith("engine")  # the engine thread's name (lsp.completion.worker)
    finally:
        gate.touch()
        await stop(client)


@pytest.mark.asyncio
async def test_unloadable_model_is_reported_and_requests_still_answered(tmp_path):
    missing = tmp_path / "no-such-model"
    client = recording_client()
    await client.start_io(*serve_command(None, tmp_path / "t.json"))  # the editor's settings name it
    shown = client.protocol.wait_for_notification(types.WINDOW_SHOW_MESSAGE)  # before it can be sent
    request = {
        "textDocument": {"uri": "file:///a.py"},
        "position": {"line": 0, "character": 0},
        "context": {"triggerKind": 1},
    }
    try:
        with pytest.raises(JsonRpcException) as early:
            await send_raw(client, types.TEXT_DOCUMENT_INLINE_COMPLETION, request, msg_id="before initialize")
        assert early.value.code == SERVER_NOT_INITIALIZED
        await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities(["utf-16"]),
                initialization_options={"diffusionInfill": {"model": str(missing)}},
            )
        )
        message = await asyncio.wrap_future(shown)
        assert message.type == types.MessageType.Error
        assert str(missing) in message.message and "no such directory" in message.message  # what was tried
        editor = Editor(client)
        uri = editor.open("x = \n")
        assert await editor.request(uri, types.Position(0, 4)) == []
        assert await editor.request(uri, types.Position(0, 4), invoked=True) == []
        with pytest.raises(JsonRpcException):
            await editor.request(uri, types.Position(9, 0))
        [reports] = client.progress_reports.values()
        assert reports[-1].kind == "end" and "failed" in reports[-1].message
        await client.shutdown_async(None)
        with pytest.raises(JsonRpcException) as late:
            await send_raw(client, types.TEXT_DOCUMENT_INLINE_COMPLETION, request, msg_id="after shutdown")
        assert late.value.code == INVALID_REQUEST
        client.exit(None)
        assert await client._server.wait() == 0
    finally:
        await client.stop()


@pytest.mark.asyncio
async def test_an_uncalibrated_checkpoint_is_reported(model_dir, tmp_path):
    """What `train` exports: the weights without the calibration chosen for other weights."""
    uncalibrated = tmp_path / "model"
    shutil.copytree(model_dir, uncalibrated, ignore=shutil.ignore_patterns("confidence.json", "sampler.json"))
    client = recording_client()
    await client.start_io(*serve_command(uncalibrated, tmp_path / "t.json"))
    shown = client.protocol.wait_for_notification(types.WINDOW_SHOW_MESSAGE)  # before it can be sent
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities(["utf-16"]), initialization_options={"diffusionInfill": MODEL_PATH}
            )
        )
        message = await asyncio.wait_for(asyncio.wrap_future(shown), 120)  # a loaded model: seconds
        assert message.type == types.MessageType.Info
        assert f"{uncalibrated} is not calibrated" in message.message
    finally:
        await stop(client)


@pytest.mark.asyncio
async def test_tcp_transport_binds_localhost(model_dir, tmp_path):
    command = serve_command(model_dir, tmp_path / "t.json", "--tcp", "0")  # port 0: the system picks one
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    try:
        serving = None
        while serving is None:  # the server says where it listens once the socket is bound
            line = (await process.stderr.readline()).decode()
            assert line, "the server exited before listening"
            serving = re.search(r"Serving on \('([\d.]+)', (\d+)\)", line)
        host, port = serving.group(1), int(serving.group(2))
        assert host == "127.0.0.1"
        client = recording_client()
        await client.start_tcp(host, port)
        options = {"maxSteps": 2, "quietAfter": ""}  # a run even right after "x = "
        await client.initialize_session(
            types.InitializeParams(capabilities=capabilities(["utf-16"]), initialization_options=options)
        )
        editor = Editor(client)
        uri = editor.open("x = \n")
        assert isinstance(await editor.request(uri, types.Position(0, 4)), list)
        assert [d for d in client.drafts.of(uri, 1) if d.final]
        await client.shutdown_session()
        await client.stop()
        assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def test_tcp_address_parsing():
    from diffusion_infill.cli.inputs import CliError, tcp_address

    assert tcp_address("8765") == ("127.0.0.1", 8765)
    assert tcp_address("0.0.0.0:8765") == ("0.0.0.0", 8765)
    assert tcp_address("[::1]:0") == ("::1", 0)
    for bad in ("localhost", "65536"):
        with pytest.raises(CliError):
            tcp_address(bad)


@pytest.mark.asyncio
async def test_stdio_is_accepted_as_most_clients_pass_it(tmp_path):
    """VS Code's TransportKind.stdio, among others, appends --stdio to the server's command."""
    client = recording_client()
    await client.start_io(*serve_command(None, tmp_path / "t.json", "--stdio"))
    try:
        result = await client.initialize_session(types.InitializeParams(capabilities=capabilities(["utf-16"])))
        assert result.capabilities.inline_completion_provider is not None
        await client.shutdown_session()
    finally:
        await client.stop()
