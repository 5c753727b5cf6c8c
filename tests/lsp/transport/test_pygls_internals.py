"""The pygls internals diffusion_infill.lsp.transport.pygls_internals reaches, checked on pygls itself: a release
that renames or changes one fails here, by name, instead of silently dropping the protocol's
guarantees (every request answered, one initialize, nothing after shutdown)."""

from __future__ import annotations

import inspect
import json
import re
from importlib.metadata import version
from pathlib import Path

import pytest
from lsprotocol import types
from packaging.requirements import Requirement
from pygls.exceptions import JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from diffusion_infill.lsp.transport import pygls_internals as internals

PYPROJECT = Path(__file__).parents[3] / "pyproject.toml"


class Sent:
    """A pygls writer that keeps the JSON bodies written to it."""

    def __init__(self):
        self.raw = b""

    def write(self, data: bytes) -> None:
        self.raw += data

    def close(self) -> None:
        pass

    def messages(self) -> list[dict]:
        bodies = self.raw.decode().split("Content-Length: ")[1:]
        return [json.loads(body.split("\r\n\r\n", 1)[1]) for body in bodies]


@pytest.fixture
def server() -> LanguageServer:
    server = LanguageServer("internals", "0")
    server.protocol.set_writer(Sent())
    return server


def receive(protocol: LanguageServerProtocol, message: dict) -> None:
    protocol.handle_message(json.loads(json.dumps(message), object_hook=protocol.structure_message))


def test_pyproject_pins_the_pygls_minor_version_tested_here():
    [pin] = [Requirement(line) for line in re.findall(r'^\s*"(pygls\b[^"]*)"', PYPROJECT.read_text(), re.MULTILINE)]
    installed = version("pygls")
    assert pin.specifier.contains(installed), f"pygls {installed} is installed, pyproject.toml asks {pin}"
    major, minor = (int(part) for part in installed.split(".")[:2])
    assert not pin.specifier.contains(f"{major}.{minor + 1}.0"), f"{pin} lets a minor release rename the internals"


def test_initialized_and_shut_down_follow_the_protocol(server):
    protocol = server.protocol
    assert not internals.initialized(protocol) and not internals.shut_down(protocol)
    receive(protocol, {"jsonrpc": "2.0", "id": 1, "method": types.INITIALIZE, "params": {"capabilities": {}}})
    assert internals.initialized(protocol) and not internals.shut_down(protocol)
    receive(protocol, {"jsonrpc": "2.0", "id": 2, "method": types.SHUTDOWN})
    assert internals.shut_down(protocol)
    assert [message["id"] for message in protocol.writer.messages()] == [1, 2]


def test_user_feature_is_the_handler_the_server_registered(server):
    opened = []
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(lambda ls, params: opened.append(params))
    handler = internals.user_feature(server.protocol, types.TEXT_DOCUMENT_DID_OPEN)
    handler("params")
    assert opened == ["params"]
    assert internals.user_feature(server.protocol, types.TEXT_DOCUMENT_DID_CLOSE) is None


def test_pending_requests_hold_what_was_sent_until_answered(server):
    protocol = server.protocol
    future = protocol.send_request("custom/ask", None)
    [msg_id] = internals.pending_requests(protocol)
    assert protocol.writer.messages()[-1]["id"] == msg_id
    receive(protocol, {"jsonrpc": "2.0", "id": msg_id, "result": 42})
    assert future.result(timeout=5) == 42 and internals.pending_requests(protocol) == {}


def test_send_data_and_send_error_write_framed_messages(server):
    protocol = server.protocol
    internals.send_data(protocol, {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}})
    internals.send_error(protocol, 7, JsonRpcInvalidRequest("no").to_response_error())
    first, second = protocol.writer.messages()
    assert first == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}
    assert second["id"] == 7 and second["error"]["code"] == JsonRpcInvalidRequest.CODE


@pytest.mark.parametrize("name", internals.OVERRIDDEN)
def test_the_overridden_methods_exist_in_pygls_with_the_same_parameters(name):
    from diffusion_infill.lsp.transport.protocol import InfillProtocol

    ours, theirs = getattr(InfillProtocol, name), getattr(LanguageServerProtocol, name, None)
    assert theirs is not None and theirs is not ours, f"pygls has no {name} any more: the override never runs"
    assert len(inspect.signature(ours).parameters) == len(inspect.signature(theirs).parameters)
