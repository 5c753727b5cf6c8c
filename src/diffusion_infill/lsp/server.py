"""The language server: LSP 3.18 inline completion from the diffusion engine, with the
converging drafts streamed as `infill/draft` notifications; code actions that fix or
regenerate a selection (lsp.fixes.actions) and diagnostics for JSON and Markdown (lsp.diagnostics.publisher,
computed in a process of their own).

Handlers only translate: protocol in (lsp.text.documents, lsp.text.positions, lsp.settings),
engine call (lsp.completion.runs on lsp.completion.worker's thread), protocol out (lsp.completion.items).
Model loading (lsp.model_lifecycle) starts with `initialize`, so that request is answered at once; its
progress is reported once the client is `initialized`. Nothing here imports the model stack
(lsp.completion.worker's thread does), so the server answers before torch is imported.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from diffusion_infill.engine.remote.errors import RemoteError
from diffusion_infill.engine.remote.settings import Credentials
from diffusion_infill.engine.requests import Draft, InfillRequest
from diffusion_infill.lsp.completion.current_engine import State, TorchStart
from diffusion_infill.lsp.completion.items import (
    DRAFT_NOTIFICATION,
    SelectedEntry,
    draft_params,
    items,
    placement,
    selected_entry,
)
from diffusion_infill.lsp.completion.policy import DocumentDrafts
from diffusion_infill.lsp.completion.runs import RunKey, Runs
from diffusion_infill.lsp.completion.sampling import CompletionFailed
from diffusion_infill.lsp.completion.telemetry import ACCEPT_COMMAND, Telemetry, accept_command
from diffusion_infill.lsp.completion.triggers import Trigger
from diffusion_infill.lsp.completion.worker import EngineWorker
from diffusion_infill.lsp.diagnostics import publisher
from diffusion_infill.lsp.diagnostics.process import WORKER_TIMEOUT_S
from diffusion_infill.lsp.fixes import actions
from diffusion_infill.lsp.fixes.edits import FIX_COMMAND
from diffusion_infill.lsp.fixes.repairs import Repairs
from diffusion_infill.lsp.fixes.results import FixResults
from diffusion_infill.lsp.fixes.targets import KINDS
from diffusion_infill.lsp.languages import Unchecked, closure_language
from diffusion_infill.lsp.model_lifecycle import ModelLifecycle
from diffusion_infill.lsp.settings import SECTION, ServerSettings, initialization_section, merge, section_of
from diffusion_infill.lsp.text.documents import Document, Documents, OutOfSync, UnknownDocument
from diffusion_infill.lsp.text.positions import UTF16, PositionError
from diffusion_infill.lsp.text.window import ModelText
from diffusion_infill.lsp.transport.framing import Frames
from diffusion_infill.lsp.transport.protocol import InfillProtocol

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServeOptions:
    settings: ServerSettings  # from the command line; initializationOptions and workspace settings override
    telemetry: Path | None  # acceptance counts file; None: in memory only
    trust_remote_code: bool = False  # command line only: a workspace setting must not enable running code
    credentials: Credentials = Credentials(None)  # the API key and the URL it may go to (command line, environment)
    torch_start: TorchStart | None = None  # torch's seed and threads (command line); None: left as they are
    worker_timeout: float | None = WORKER_TIMEOUT_S  # seconds a repair or diagnostics computation may take


class InfillServer(LanguageServer):
    def __init__(self, options: ServeOptions):
        # pygls' thread pool only reads stdin here (no threaded handlers), one read at a time; with
        # more workers a race between a read's end and the next submit adds threads up to cpu + 4.
        super().__init__(
            "diffusion-infill",
            "0.1.0",
            protocol_cls=InfillProtocol,
            max_workers=1,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.base = options.settings  # command line, then initializationOptions: what workspace settings override
        self.settings = options.settings
        self.credentials = options.credentials
        self.documents = Documents()
        self.unchecked = Unchecked()  # languageIds without a grammar, told once
        self.worker = EngineWorker(options.trust_remote_code, options.torch_start)
        self.runs = Runs(self.worker, self.publish_draft)  # they own the request policy (Runs.adopt)
        self.runs.adopt(self.settings)  # until settings and a model come
        self.fixes = FixResults()  # code-action results per document version and target
        self.repairs = Repairs(options.worker_timeout)  # Fix JSON and Fix Markdown, in a process of their own
        self.diagnostics = publisher.Publisher(self, options.worker_timeout)
        self.telemetry = Telemetry(options.telemetry)
        self.model = ModelLifecycle(self)  # loads, reports the load, publishes the state
        self.problems: list[str] = []  # settings ignored at initialize, shown once initialized
        self._tasks: set[asyncio.Task] = set()  # background tasks, referenced until done
        self.shut_down = False  # a shutdown request came: exit ends with status 0

    @property
    def encoding(self) -> str:
        """The negotiated position encoding, as its LSP name."""
        encoding = self.workspace.position_encoding or UTF16
        return str(getattr(encoding, "value", encoding))

    def publish_draft(self, key: RunKey, at: types.Position, draft: Draft, ms: float, answered: list[Draft]) -> None:
        self.protocol.notify(DRAFT_NOTIFICATION, draft_params(key.uri, key.version, at, draft, ms, answered))

    def background(self, coroutine) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def tell(self, kind: types.MessageType, message: str) -> None:
        """Shows `message` to the user and logs it."""
        log.log(logging.ERROR if kind == types.MessageType.Error else logging.WARNING, "%s", message)
        self.window_show_message(types.ShowMessageParams(type=kind, message=f"diffusion-infill: {message}"))

    def start_io(self, stdin=None, stdout=None) -> None:
        # pygls trusts stdin's framing; one broken frame would lose every later message (lsp.transport.framing).
        frames = Frames(stdin or sys.stdin.buffer)
        super().start_io(frames, stdout)
        if frames.refused is not None:  # logged; the editor sees the server exit and starts another
            sys.exit(1)

    def report_server_error(self, error: Exception, source) -> None:
        self.protocol.server_error(error, source)  # pygls would show it to the user (lsp.transport.protocol)


def _locate(
    ls: InfillServer, params: types.InlineCompletionParams
) -> tuple[Document, int, SelectedEntry | None] | None:
    """The document, the cursor offset and the selected menu entry of a request; None while the server's copy
    of the document is not the editor's text (lsp.text.documents.OutOfSync)."""
    try:
        document = ls.documents.get(params.text_document.uri)
        if not document.in_sync:
            return None
        cursor = document.lines.offset(params.position, ls.encoding)
        selected = selected_entry(document.lines, ls.encoding, cursor, params.context.selected_completion_info)
    except (UnknownDocument, PositionError) as error:
        raise JsonRpcInvalidParams(str(error)) from None
    return document, cursor, selected


async def inline_completion(ls: InfillServer, params: types.InlineCompletionParams) -> list[types.InlineCompletionItem]:
    """textDocument/inlineCompletion: the converged, closure-valid completion(s) at the cursor."""
    trigger = Trigger.of(params.context.trigger_kind)
    # with -v, a user can tell whether the editor asks at all: some editors never send this request
    uri, at = params.text_document.uri, params.position
    log.debug("inlineCompletion %s %d:%d %s", uri, at.line, at.character, trigger)
    if (located := _locate(ls, params)) is None:
        return []
    document, cursor, selected = located
    if ls.worker.state is State.FAILED or not ls.settings.enabled_for(document.language_id):
        return []
    where = placement(document.text, cursor, selected)
    lines, encoding = document.lines, ls.encoding  # the request's version: the answer's ranges refer to it
    policy = ls.runs.policy
    key = RunKey(document.uri, document.version, cursor, selected, policy.samples(trigger), trigger)
    window = ModelText.of(where.prefix, where.suffix)
    # Only an engine that judges copied lines reads the other documents: no copy of them per keystroke otherwise.
    others = ls.documents.tails_of_others(document) if policy.document_drafts is DocumentDrafts.ENGINE else ()
    language = closure_language(document.language_id, document.uri)
    request = InfillRequest(window.prefix, window.suffix, language, invoked=trigger is Trigger.INVOKED, others=others)
    try:
        finals = await ls.runs.complete(key, request, at)
    except CompletionFailed as error:  # logged by the worker; the next request gets a fresh engine
        raise actions.RequestFailed(f"completion failed: {error}") from None
    except RemoteError as error:  # the server keeps serving; the user hears of it once
        ls.model.server_failed(str(error))
        return []
    if finals:  # answered (superseded runs answer nothing)
        ls.model.server_answered()
    result = items(
        [window.to_document(draft.text) for draft in finals], where, lines, encoding, accept_command(trigger.value)
    )
    ls.telemetry.offered(trigger.value, len(result))
    return result


def initialize(ls: InfillServer, params: types.InitializeParams) -> None:
    """Reads initializationOptions and starts loading the model; the reply does not wait for it."""
    ls.base, problems = merge(ls.base, initialization_section(params.initialization_options))
    ls.settings = ls.base
    ls.model.load()
    ls.problems = problems  # shown once initialized: a server may not message the user before its reply


def initialized(ls: InfillServer, params: types.InitializedParams) -> None:
    if ls.problems:
        ls.tell(types.MessageType.Warning, "ignored settings: " + "; ".join(ls.problems))
    ls.background(ls.model.report())


def did_open(ls: InfillServer, params: types.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    document = ls.documents.open(item.uri, item.language_id, item.version, item.text)
    if (message := ls.unchecked.first(item.language_id, item.uri)) is not None:
        ls.window_log_message(types.LogMessageParams(types.MessageType.Info, message))
    ls.runs.invalidate(item.uri)
    ls.fixes.forget(item.uri)
    ls.repairs.stop(item.uri, "the document was opened again")
    ls.diagnostics.schedule(document)


def did_change(ls: InfillServer, params: types.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    ls.runs.invalidate(uri)  # first: whatever happens next, the old run is stale
    ls.repairs.stop(uri, "the document changed")
    try:
        document = ls.documents.change(uri, params.text_document.version, params.content_changes, ls.encoding)
    except UnknownDocument as error:
        log.warning("ignoring didChange: %s", error)
        return
    except OutOfSync as error:  # raised once per loss: the user is told once, not at every keystroke
        ls.tell(types.MessageType.Warning, str(error))
        document = ls.documents.get(uri)
    ls.diagnostics.schedule(document)  # out of sync: clears what was shown, which may point anywhere now


def did_close(ls: InfillServer, params: types.DidCloseTextDocumentParams) -> None:
    ls.runs.invalidate(params.text_document.uri)
    ls.fixes.forget(params.text_document.uri)
    ls.repairs.stop(params.text_document.uri, "the document was closed")
    document = ls.documents.close(params.text_document.uri)
    if document is not None:
        ls.diagnostics.forget(document)


async def did_change_configuration(ls: InfillServer, params: types.DidChangeConfigurationParams) -> None:
    """workspace/didChangeConfiguration: pushed settings, or a nudge to pull them."""
    section = section_of(params.settings)
    if section is None and ls.client_capabilities.workspace and ls.client_capabilities.workspace.configuration:
        pulled = await ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section=SECTION)])
        )
        section = pulled[0] if pulled else None
    settings, problems = merge(ls.base, section)
    if problems:
        ls.tell(types.MessageType.Warning, "ignored settings: " + "; ".join(problems))
    previous, ls.settings = ls.settings, settings
    ls.model.switch(previous)


def accepted(ls: InfillServer, trigger: str) -> None:
    """The client ran an item's command: the user accepted a completion. Counted, nothing else."""
    if Trigger.named(trigger) is None:
        raise JsonRpcInvalidParams(f"{ACCEPT_COMMAND}: unknown trigger {trigger!r}")
    ls.telemetry.accepted(trigger)


def shutdown(ls: InfillServer, params: Any) -> None:
    ls.runs.clear()
    ls.worker.shutdown()
    ls.diagnostics.shutdown()
    ls.repairs.shutdown()
    ls.telemetry.flush()
    ls.shut_down = True


def end_session(ls: InfillServer) -> None:
    """The client closed its TCP connection (lsp.transport.tcp): what its session holds is freed, as at shutdown,
    and its model load ends before the next session's starts (two loads at once in a process fail)."""
    if not ls.shut_down:
        shutdown(ls, None)
    ls.worker.shutdown(wait=True)


def exit_now(ls: InfillServer, params: Any) -> None:
    """exit: ends the process now. Python's own exit would first wait for the engine thread, which may
    be seconds into a model load; nothing it does needs finishing (the acceptance counts not yet written are,
    here). The diagnostics and repairs processes end themselves once the server is gone (lsp.diagnostics.process)."""
    ls.telemetry.flush()
    logging.shutdown()
    sys.stdout.flush()
    os._exit(0 if ls.shut_down else 1)  # the LSP spec's exit codes: 1 without a shutdown request first


def create_server(options: ServeOptions) -> InfillServer:
    server = InfillServer(options)
    server.feature(types.INITIALIZE)(initialize)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(did_close)
    server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)
    server.feature(types.SHUTDOWN)(shutdown)
    server.feature(types.EXIT)(exit_now)
    # Without options pygls does not advertise inlineCompletionProvider, and clients never ask.
    server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())(inline_completion)
    server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=KINDS, resolve_provider=True)
    )(actions.code_actions)
    server.feature(types.CODE_ACTION_RESOLVE)(actions.resolve)
    server.command(FIX_COMMAND)(actions.run_fix)
    server.command(ACCEPT_COMMAND)(accepted)
    return server
