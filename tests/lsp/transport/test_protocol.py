"""diffusion_infill.lsp.transport.protocol.InfillProtocol on its own, fed messages as pygls' reader hands them
over: what a handled message leaves behind (issue 52's soak found 3.3 KB a document opened and closed)."""

from __future__ import annotations

import asyncio
import gc
import json
import weakref

import pytest
from lsprotocol import types
from pygls.lsp.server import LanguageServer

from diffusion_infill.lsp.transport import pygls_internals as internals
from diffusion_infill.lsp.transport.protocol import InfillProtocol

NOTIFICATIONS = 50


class Discarded:
    """A pygls writer that drops what is written."""

    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


class Result:
    """What a notification handler returns (None is what they do; an object here, so a weak reference can watch it)."""


@pytest.fixture
def server() -> LanguageServer:
    server = LanguageServer("protocol", "0", protocol_cls=InfillProtocol)
    server.protocol.set_writer(Discarded())
    return server


def receive(server: LanguageServer, method: str, params: dict | None, msg_id: int | None = None) -> None:
    message = {"jsonrpc": "2.0", "method": method, "params": params} | ({} if msg_id is None else {"id": msg_id})
    server.protocol.handle_message(json.loads(json.dumps(message), object_hook=server.protocol.structure_message))


def opened(index: int) -> dict:
    item = {"uri": f"file:///p{index}.py", "languageId": "python", "version": 1, "text": "x = 1\n"}
    return {"textDocument": item}


async def test_handled_notifications_leave_no_future_behind(server):
    """didOpen and didClose run as generators here (pygls' own and ours), didChangeConfiguration as a
    coroutine: pygls 2.1.1 kept each one's future, for the whole session."""
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(lambda ls, params: None)
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(lambda ls, params: None)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def configured(ls, params) -> None:
        await asyncio.sleep(0)

    receive(server, types.INITIALIZE, {"capabilities": {}}, msg_id=1)
    for index in range(NOTIFICATIONS):
        receive(server, types.TEXT_DOCUMENT_DID_OPEN, opened(index))
        receive(server, types.WORKSPACE_DID_CHANGE_CONFIGURATION, {"settings": None})
        receive(server, types.TEXT_DOCUMENT_DID_CLOSE, {"textDocument": {"uri": f"file:///p{index}.py"}})
    for _ in range(3):  # the coroutines' two steps, then their done callbacks
        await asyncio.sleep(0)
    assert internals.pending_requests(server.protocol) == {}


async def test_what_a_notification_handler_returned_is_freed_once_it_is_done(server):
    """A coroutine's future holds its result (and its frame until then): freed with the future."""
    kept: list[weakref.ref] = []

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls, params) -> Result:
        await asyncio.sleep(0)
        result = Result()
        kept.append(weakref.ref(result))
        return result  # a coroutine's result stays in its future

    receive(server, types.INITIALIZE, {"capabilities": {}}, msg_id=1)
    receive(server, types.TEXT_DOCUMENT_DID_OPEN, opened(0))
    for _ in range(3):
        await asyncio.sleep(0)
    gc.collect()
    assert len(kept) == 1 and kept[0]() is None, "the handler's future (and what it holds) is still referenced"


async def test_a_request_still_gets_its_answer_and_a_cancel_still_reaches_a_running_one(server):
    answered = asyncio.Event()

    @server.feature("custom/slow")
    async def slow(ls, params) -> int:
        await answered.wait()
        return 1

    receive(server, types.INITIALIZE, {"capabilities": {}}, msg_id=1)
    receive(server, "custom/slow", None, msg_id=2)
    await asyncio.sleep(0)
    assert list(internals.pending_requests(server.protocol)) == [2], "a running request is pending until answered"
    receive(server, types.CANCEL_REQUEST, {"id": 2})
    await asyncio.sleep(0)
    assert internals.pending_requests(server.protocol) == {}
