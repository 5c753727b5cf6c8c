"""pygls' language server protocol with five gaps and one leak closed, so every request gets a reply:

- params that do not parse (wrong types, missing fields): pygls 2.1 raises while
  decoding and nothing answers; here the request gets an InvalidParams error saying
  which field was wrong;
- requests before `initialize` get ServerNotInitialized, and requests after
  `shutdown` get InvalidRequest, where pygls drops them silently; so does a second
  `initialize`, which pygls would run again;
- a body that is not JSON gets ParseError, and JSON that is not a JSON-RPC 2.0 message
  gets InvalidRequest, with id null where it has none, as JSON-RPC 2.0 says (pygls
  logs them, some with their whole content: document text, at WARNING); so does a
  notification's method sent with an id, which pygls runs and never answers;
- a lone UTF-16 surrogate in any string of a message is replaced by U+FFFD as the body is
  decoded (lsp.transport.strings), where pygls passed it on to fail whatever encoded it;
- document sync is `diffusion_infill.lsp.text.documents`' job: pygls' own copy (line splitting at form feeds,
  positions clamped in place) is not kept;
- a notification's future is dropped once its handler is done: pygls keeps it forever (`_forgetting`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any

from cattrs import transform_error
from cattrs.errors import ClassValidationError
from lsprotocol import types
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.protocol import LanguageServerProtocol, lsp_method

from diffusion_infill.lsp.transport import pygls_internals as internals
from diffusion_infill.lsp.transport.strings import well_formed_object

log = logging.getLogger(__name__)

# Requests answered normally before `initialize` and after `shutdown`.
_ALWAYS_ALLOWED = frozenset({types.INITIALIZE, types.EXIT})


def _valid_id(msg_id: Any) -> bool:
    return isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool)


def _is_message(data: Any) -> bool:
    """A JSON-RPC 2.0 request, notification or response (its params are checked later)."""
    if not isinstance(data, dict) or data.get("jsonrpc") != "2.0":
        return False
    if "id" in data:
        return _valid_id(data["id"]) or ("method" not in data and data["id"] is None)  # null: an error response
    return "method" in data


def _reason(error: BaseException) -> str:
    cause = error.__cause__
    if isinstance(cause, ClassValidationError):
        return "; ".join(transform_error(cause))
    return str(cause or error) or type(error).__name__


def _forgetting(futures: dict[Any, Any], msg_id: Any, callback: Callable[[Future], None], future: Future) -> None:
    """`callback(future)`, once `future`'s entry in `futures` (pygls' futures by message id) is gone."""
    if futures.get(msg_id) is future:  # a client may reuse a request's id once it was answered
        del futures[msg_id]
    callback(future)


class InfillProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]):
        # pygls passes this to json.loads as object_hook, which calls it for every object of a
        # body, innermost first: a dict with a "jsonrpc" key inside params would be taken for a
        # message. Only the outermost object is one, so handle_message structures it. Every
        # object's strings lose their lone surrogates here (lsp.transport.strings).
        return well_formed_object(data)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        # A cancel for a request already answered is routine (editors cancel at every keystroke,
        # and the answer may be on its way): pygls logs it as a WARNING, which editors file as an
        # error (stderr).
        if msg_id in internals.pending_requests(self):
            super()._handle_cancel_notification(msg_id)

    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None) -> None:
        # pygls 2.1.1 (protocol/json_rpc.py, _execute_handler, lines 207-221) keeps the future of every handler
        # run as a coroutine or a generator under its message id, and only a request's answer takes it out
        # again (_send_handler_result, line 296). A notification's id is a fresh uuid (_handle_notification,
        # line 363), as is that of the handler a generator yields to (_run_generator, line 277): didOpen,
        # didChange and didClose are generators, so every one of them kept about 1.6 KB for the whole session
        # (issue 52: 3.3 KB per document opened and closed, docs/reliability.md). Each entry goes when its
        # handler is done.
        callback = partial(_forgetting, internals.pending_requests(self), msg_id, callback)
        super()._execute_handler(msg_id, handler, callback, args, kwargs)

    def reply_error(self, msg_id: Any, error: JsonRpcException) -> None:
        """An error response; unlike pygls' own, it keeps `"id": null` when the id is unknown."""
        error_object = {"code": error.code, "message": error.message}
        internals.send_data(self, {"jsonrpc": self.VERSION, "id": msg_id, "error": error_object})

    def server_error(self, error: Exception, source) -> None:
        """pygls' report of an error it caught (LanguageServer.report_server_error), which would otherwise show it
        to the user."""
        if source is JsonRpcException and isinstance(error, (ValueError, RecursionError)):
            # pygls' read loop could not decode a body (JSON, UTF-8, nesting depth): JSON-RPC answers it.
            self.reply_parse_error(error)
            return
        # A failed request was answered with its error; errors outside a request (a bad
        # notification) are logged, not shown: the user cannot act on them.
        if source is not FeatureRequestError:
            log.error("%s: %s", getattr(source, "__name__", source), error)

    def reply_parse_error(self, error: BaseException) -> None:
        """A message body that is not JSON (or not UTF-8): its id cannot be known."""
        log.warning("answering a message that does not parse: %s: %s", type(error).__name__, error)
        self.reply_error(None, JsonRpcParseError(f"Parse error: {error}"))

    def _structure(self, data: Any):
        """The typed message, or None when `data` was answered with an error (or dropped) here."""
        if not _is_message(data):
            # A list, a number, no "jsonrpc", an id of another type ...: its content is not
            # logged, it may hold document text.
            msg_id = data.get("id") if isinstance(data, dict) and _valid_id(data.get("id")) else None
            log.warning("answering a message that is not JSON-RPC 2.0 (id %r) with InvalidRequest", msg_id)
            self.reply_error(msg_id, JsonRpcInvalidRequest("Invalid Request: not a JSON-RPC 2.0 message"))
            return None
        try:
            message = super().structure_message(data)
        except JsonRpcException as error:
            method = data.get("method", "")
            if "id" in data and method:  # a request: it must get a reply
                reason = f"invalid params for {method}: {_reason(error)}"
                log.warning("answering request %r with an error: %s", data["id"], reason)
                internals.send_error(self, data["id"], JsonRpcInvalidParams(reason).to_response_error())
            else:  # a notification: nobody to answer, so the log is where it shows
                log.warning("dropping %s with invalid params: %s", method or "a message", _reason(error))
            return None
        if "id" in data and "method" in data and not hasattr(message, "id"):
            # A notification's method sent with an id: pygls would drop the id and never answer.
            self.reply_error(data["id"], JsonRpcInvalidRequest(f"{data['method']} is a notification, not a request"))
            return None
        return message

    def handle_message(self, data):
        message = self._structure(data)
        if message is None:
            return
        method = getattr(message, "method", None)
        if method == types.INITIALIZE and hasattr(message, "id") and internals.initialized(self):
            # The spec allows one initialize; pygls would run it again and reload the model.
            internals.send_error(
                self, message.id, JsonRpcInvalidRequest("initialize was already received").to_response_error()
            )
            return
        if method is not None and hasattr(message, "id") and method not in _ALWAYS_ALLOWED:
            if not internals.initialized(self):
                error = JsonRpcServerNotInitialized(f"{method} before initialize")
                internals.send_error(self, message.id, error.to_response_error())
                return
            if internals.shut_down(self):
                error = JsonRpcInvalidRequest(f"{method} after shutdown")
                internals.send_error(self, message.id, error.to_response_error())
                return
        super().handle_message(message)

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams):
        if (handler := internals.user_feature(self, types.TEXT_DOCUMENT_DID_OPEN)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        if (handler := internals.user_feature(self, types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams):
        if (handler := internals.user_feature(self, types.TEXT_DOCUMENT_DID_CLOSE)) is not None:
            yield handler, (params,), None
