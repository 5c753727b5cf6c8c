"""`serve --tcp` (lsp.transport.tcp): a client that disconnects ends its session, not the server; the
next one gets a session of its own, and a connection while one is open is closed (one at a time)."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from commands import serve_command
from lsprotocol import types

from tests.lsp.lsp_client import Editor, capabilities, recording_client, stop

INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}


async def listening(process: asyncio.subprocess.Process) -> int:
    """The port of a `serve --tcp 0` once it listens (its INFO line says where)."""
    while True:
        line = (await process.stderr.readline()).decode()
        assert line, "the server exited before listening"
        if serving := re.search(r"Serving on \('127\.0\.0\.1', (\d+)\)", line):
            return int(serving.group(1))


async def initialize_and_leave(port: int) -> bytes:
    """A client that sends `initialize`, reads the answer's first bytes and closes the socket."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = json.dumps(INITIALIZE).encode()
    writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    answer = await asyncio.wait_for(reader.read(100), 60)
    writer.close()
    await writer.wait_closed()
    return answer


@pytest.mark.asyncio
async def test_a_client_that_disconnects_leaves_the_server_listening_for_the_next(tiny_model_dir, tmp_path):
    command = serve_command(tiny_model_dir, tmp_path / "t.json", "--tcp", "127.0.0.1:0")
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    try:
        port = await listening(process)
        assert (await initialize_and_leave(port)).startswith(b"Content-Length: ")
        client = recording_client()
        await client.start_tcp("127.0.0.1", port)  # refused here when the first client's leaving ended the server
        try:
            options = {"maxSteps": 2, "quietAfter": ""}  # a run even right after "x = "
            result = await client.initialize_session(  # its own session: not "initialize was already received"
                types.InitializeParams(capabilities=capabilities(["utf-16"]), initialization_options=options)
            )
            assert result.capabilities.inline_completion_provider is not None
            # one at a time: a connection while this one is open is closed at once
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            assert await asyncio.wait_for(reader.read(), 30) == b""
            writer.close()
            editor = Editor(client)
            uri = editor.open("x = \n")
            assert isinstance(await editor.request(uri, types.Position(0, 4)), list)
            assert [d for d in client.drafts.of(uri, 1) if d.final]
        finally:
            await stop(client)
        assert await asyncio.wait_for(process.wait(), 60) == 0  # `exit` still ends the process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
