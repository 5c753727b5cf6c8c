"""pygls' language server protocol with three gaps closed, so every request gets a reply:

- params that do not parse (wrong types, missing fields): pygls 2.1 raises while
  decoding and nothing answers; here the request gets an InvalidParams error saying
  which field was wrong;
- requests before `initialize` get ServerNotInitialized, and requests after
  `shutdown` get InvalidRequest, where pygls drops them silently;
- document sync is `lsp.documents`' job: pygls' own copy (line splitting at form feeds,
  positions clamped in place) is not kept.
"""

from __future__ import annotations

import logging
from typing import Any

import attrs
from cattrs import transform_error
from cattrs.errors import ClassValidationError
from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import LanguageServerProtocol, lsp_method

log = logging.getLogger(__name__)

# Requests answered normally before `initialize` and after `shutdown`.
_ALWAYS_ALLOWED = frozenset({types.INITIALIZE, types.EXIT})


@attrs.define
class AnsweredMessage:
    """A message already answered (or dropped) while it was decoded; handle_message skips it."""

    method: str
    jsonrpc: str = "answered"


def _reason(error: BaseException) -> str:
    cause = error.__cause__
    if isinstance(cause, ClassValidationError):
        return "; ".join(transform_error(cause))
    return str(cause or error) or type(error).__name__


class InfillProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            method = data.get("method", "")
            if "id" in data and method:  # a request: it must get a reply
                reason = f"invalid params for {method}: {_reason(error)}"
                log.warning("answering request %r with an error: %s", data["id"], reason)
                self._send_response(data["id"], error=JsonRpcInvalidParams(reason).to_response_error())
            else:  # a notification: nobody to answer, so the log is where it shows
                log.warning("dropping %s with invalid params: %s", method or "a message", _reason(error))
            return AnsweredMessage(method)

    def handle_message(self, message):
        if isinstance(message, AnsweredMessage):
            return
        method = getattr(message, "method", None)
        if method is not None and hasattr(message, "id") and method not in _ALWAYS_ALLOWED:
            if self._workspace is None:
                error = JsonRpcServerNotInitialized(f"{method} before initialize")
                self._send_response(message.id, error=error.to_response_error())
                return
            if self._shutdown:
                error = JsonRpcInvalidRequest(f"{method} after shutdown")
                self._send_response(message.id, error=error.to_response_error())
                return
        super().handle_message(message)

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None
