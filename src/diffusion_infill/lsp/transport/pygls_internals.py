"""The pygls internals the protocol (diffusion_infill.lsp.transport.protocol) and the tests reach, in one place.

pygls 2.1 has no public way to answer a request with a raw error object (id null included), to
tell whether `initialize` or `shutdown` came, to look up a user's handler for a method the
protocol also handles, or to send a hand-made message; so these read its private attributes.
A pygls release that renames one breaks tests/lsp/transport/test_pygls_internals.py loudly, and
pyproject.toml pins pygls to the minor version that test passed on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lsprotocol.types import ResponseError
from pygls.protocol import JsonRPCProtocol, LanguageServerProtocol

# pygls methods that lsp.transport.protocol.InfillProtocol overrides: renamed, the override would never run
OVERRIDDEN = ("structure_message", "handle_message", "_handle_cancel_notification", "_execute_handler")


def pending_requests(protocol: JsonRPCProtocol) -> dict[Any, Any]:
    """The requests sent and not yet answered, by id: pygls resolves each with set_result / set_exception.
    The same dict holds the futures of the handlers running for requests (and notifications) received."""
    return protocol._request_futures


def send_data(protocol: JsonRPCProtocol, data: dict[str, Any]) -> None:
    """Sends `data` as it is, framed."""
    protocol._send_data(data)


def send_error(protocol: JsonRPCProtocol, msg_id: Any, error: ResponseError) -> None:
    """Answers request `msg_id` with `error`."""
    protocol._send_response(msg_id, error=error)


def initialized(protocol: LanguageServerProtocol) -> bool:
    """Whether `initialize` has been handled (pygls makes the workspace then)."""
    return protocol._workspace is not None


def shut_down(protocol: LanguageServerProtocol) -> bool:
    """Whether `shutdown` has been handled."""
    return protocol._shutdown


def user_feature(protocol: JsonRPCProtocol, method: str) -> Callable | None:
    """The handler the server registered for `method` (`@server.feature`), if any."""
    return protocol.fm.features.get(method)
