"""Driving the real `diffusion-infill serve` process with pytest-lsp's client: start and stop
it, edit documents as an editor would, record `infill/draft` notifications. Waiting is
always on messages, never on time."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

from diffusion_infill.lsp.text.positions import Lines
from diffusion_infill.lsp.transport import pygls_internals

DRAFT = "infill/draft"
STATUS = "infill/status"
_documents = itertools.count(1)  # every document of a test session gets its own URI


def capabilities(encodings: list[str] | None = None) -> types.ClientCapabilities:
    """Neovim's capabilities plus inline completion (LSP 3.18), offering `encodings`."""
    caps = client_capabilities("neovim")
    caps.text_document.inline_completion = types.InlineCompletionClientCapabilities()
    caps.general.position_encodings = encodings
    return caps


@dataclass
class DraftRecorder:
    """Every notification of one method (infill/draft, infill/status), in arrival order, with waiters
    for the ones to come."""

    drafts: list[Any]
    waiters: list[tuple[Callable[[Any], bool], asyncio.Future]]

    def receive(self, params: Any) -> None:
        self.drafts.append(params)
        for waiter in list(self.waiters):
            matches, future = waiter
            if matches(params) and not future.done():
                future.set_result(params)
                self.waiters.remove(waiter)

    async def first(self, matches: Callable[[Any], bool]) -> Any:
        """The first draft that `matches`, already received or still to come."""
        for draft in self.drafts:
            if matches(draft):
                return draft
        future = asyncio.get_running_loop().create_future()
        self.waiters.append((matches, future))
        return await future

    def of(self, uri: str, version: int, position: types.Position | None = None) -> list[Any]:
        at = None if position is None else (position.line, position.character)
        return [
            d
            for d in self.drafts
            if d.uri == uri and d.version == version and (at is None or (d.position.line, d.position.character) == at)
        ]


def recording_client() -> LanguageClient:
    client = make_test_lsp_client()
    client.drafts = DraftRecorder([], [])
    client.feature(DRAFT)(lambda ls, params: client.drafts.receive(params))
    client.statuses = DraftRecorder([], [])
    client.feature(STATUS)(lambda ls, params: client.statuses.receive(params))
    return client


# Unless a test sets them, every request runs the engine: answers without a run (document
# drafts, quiet characters) have their own tests (test_lsp_without_a_run.py).
MODEL_PATH = {"documentDrafts": False, "quietAfter": ""}


async def start(
    command: list[str],
    caps: types.ClientCapabilities,
    options: dict | None = None,
) -> tuple[LanguageClient, types.InitializeResult]:
    client = recording_client()
    await client.start_io(*command)
    section = (options or {}).get("diffusionInfill")
    if isinstance(section, dict):
        options = {**options, "diffusionInfill": {**MODEL_PATH, **section}}
    elif options is None:
        options = {"diffusionInfill": MODEL_PATH}
    result = await client.initialize_session(types.InitializeParams(capabilities=caps, initialization_options=options))
    return client, result


async def stop(client: LanguageClient) -> None:
    await client.shutdown_session()
    await client.stop()


class Editor:
    """Opens and edits documents on one client, keeping versions and text as the editor would."""

    def __init__(self, client: LanguageClient):
        self.client = client
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}

    def open(self, text: str, language: str = "python", suffix: str = ".py") -> str:
        uri = f"file:///project/doc{next(_documents)}{suffix}"
        self.texts[uri], self.versions[uri] = text, 1
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, language, 1, text))
        )
        return uri

    def insert(self, uri: str, position: types.Position, text: str, encoding: str = "utf-16") -> None:
        lines = Lines(self.texts[uri])
        offset = lines.offset(position, encoding)
        self.texts[uri] = self.texts[uri][:offset] + text + self.texts[uri][offset:]
        self.versions[uri] += 1
        change = types.TextDocumentContentChangePartial(range=types.Range(position, position), text=text)
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]), [change]
            )
        )

    def end_of(self, uri: str, marker: str, encoding: str = "utf-16") -> types.Position:
        """The position right after the first `marker` in the document."""
        text = self.texts[uri]
        return Lines(text).position(text.index(marker) + len(marker), encoding)

    def request(
        self,
        uri: str,
        position: types.Position,
        invoked: bool = False,
        selected: types.SelectedCompletionInfo | None = None,
        msg_id: str | None = None,
    ) -> asyncio.Future:
        """Sends an inline completion request now, in order with the edits (not when awaited)."""
        kind = types.InlineCompletionTriggerKind.Invoked if invoked else types.InlineCompletionTriggerKind.Automatic
        params = types.InlineCompletionParams(
            context=types.InlineCompletionContext(trigger_kind=kind, selected_completion_info=selected),
            text_document=types.TextDocumentIdentifier(uri),
            position=position,
        )
        sent = self.client.protocol.send_request(types.TEXT_DOCUMENT_INLINE_COMPLETION, params, msg_id=msg_id)
        return asyncio.wrap_future(sent)


def final_of(client: LanguageClient, uri: str, version: int, position: types.Position) -> Any:
    """The final draft of the run at `position` in that version of the document: exactly one."""
    finals = [d for d in client.drafts.of(uri, version, position) if d.final]
    assert len(finals) == 1, f"expected one final draft, got {finals}"
    return finals[0]


def send_raw(client: LanguageClient, method: str, params: Any, msg_id: int | str):
    """A request with arbitrary params: the typed client cannot even serialize malformed ones."""
    future = asyncio.get_running_loop().create_future()
    pygls_internals.pending_requests(client.protocol)[msg_id] = _Bridge(future)  # resolved by pygls' response handling
    pygls_internals.send_data(client.protocol, {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return future


class _Bridge:
    """What pygls' response handling expects of a pending request: set_result / set_exception."""

    def __init__(self, future: asyncio.Future):
        self.future = future

    def set_result(self, result: Any) -> None:
        self.future.set_result(result)

    def set_exception(self, error: BaseException) -> None:
        self.future.set_exception(error)


def apply(text: str, item: types.InlineCompletionItem, encoding: str = "utf-16") -> str:
    """The document after accepting `item`."""
    lines = Lines(text)
    start, end = lines.offset(item.range.start, encoding), lines.offset(item.range.end, encoding)
    insert = item.insert_text if isinstance(item.insert_text, str) else item.insert_text.value
    return text[:start] + insert + text[end:]
