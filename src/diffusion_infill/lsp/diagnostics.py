"""textDocument/publishDiagnostics for JSON and Markdown documents.

JSON: the damage tree-sitter-json and `json.loads` find (diffusion_infill.engine.repair.jsonfix.damage); in
JSONC documents comments and trailing commas are allowed, so they are blanked out first.
Markdown: the structure rules (diffusion_infill.engine.repair.markdown_rules). Each diagnostic carries our
`source`, so a code action request that names it is offered the matching fix
(diffusion_infill.lsp.actions).

Both look at the whole document: milliseconds for a small one, seconds for a large one
(4.5 s for 9 MB of JSON). So `Publisher` computes them on a thread of their own, a
short while after the last edit of a burst, for a copy of that version, and publishes
them only if the document still has that version; documents over `MAX_CHARS` get none.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from lsprotocol import types

from diffusion_infill.engine.repair import jsonfix, markdown_rules
from diffusion_infill.lsp.documents import Document, Documents, UnknownDocument
from diffusion_infill.lsp.languages import JSON_LANGUAGES, JSONC_LANGUAGES, MARKDOWN_LANGUAGES, SOURCE

# Characters. The rules cost about a second per 2 MB of broken JSON or of Markdown; above this a
# document would keep the diagnostics thread (and a share of the GIL) busy for seconds at every
# edit, for a file that is generated data far more often than something a person edits by hand.
MAX_CHARS = 2_000_000
# Seconds after an edit before computing: a burst of keystrokes computes the last version once.
DEBOUNCE_S = 0.15
log = logging.getLogger(__name__)


def _range(document: Document, start: int, end: int, encoding: str) -> types.Range:
    lines = document.lines
    return types.Range(lines.position(start, encoding), lines.position(end, encoding))


def diagnose(document: Document, encoding: str) -> list[types.Diagnostic]:
    """The problems of a JSON or Markdown document; empty for other languages."""
    if document.language_id in JSON_LANGUAGES | JSONC_LANGUAGES and document.text.strip():
        jsonc = document.language_id in JSONC_LANGUAGES
        text = jsonfix.strip_jsonc(document.text) if jsonc else document.text  # same offsets
        return [types.Diagnostic(range=_range(document, item.start, item.end, encoding), message=item.message,
                                 severity=types.DiagnosticSeverity.Error, source=SOURCE, code="json")
                for item in jsonfix.damage(text)]
    if document.language_id in MARKDOWN_LANGUAGES:
        return [types.Diagnostic(range=_range(document, problem.start, problem.end, encoding),
                                 message=problem.message, severity=types.DiagnosticSeverity.Warning,
                                 source=SOURCE, code=f"markdown-{problem.rule}")
                for problem in markdown_rules.problems(document.text)]
    return []


def handles(document: Document) -> bool:
    return document.language_id in JSON_LANGUAGES | JSONC_LANGUAGES | MARKDOWN_LANGUAGES


def _report_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("diagnostics failed: %r", task.exception())


class Host(Protocol):
    """What the publisher uses of the server (diffusion_infill.lsp.server.InfillServer), which owns it."""

    documents: Documents

    @property
    def encoding(self) -> str: ...

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None: ...

    def window_log_message(self, params: types.LogMessageParams) -> None: ...


class Publisher:
    """Diagnostics per document: debounced, computed off the event loop, never for a stale version."""

    def __init__(self, ls: Host):
        self._ls = ls
        # A thread of their own: on the engine thread they would wait behind model loading and
        # completions (seconds each); one is enough, as each document computes only its latest
        # version, and a second would only share the GIL with the first.
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="diagnostics")
        self._pending: dict[str, asyncio.Task] = {}  # per URI: waiting out the burst, or computing
        self._too_large: set[str] = set()  # URIs already told they get no diagnostics

    def schedule(self, document: Document) -> None:
        """Publishes the document's diagnostics once its edits pause; replaces a pending computation."""
        if not handles(document):
            return
        self._cancel(document.uri)
        task = asyncio.ensure_future(self._publish_later(document.uri))
        task.add_done_callback(_report_failure)
        self._pending[document.uri] = task  # kept when done: the next edit or the close replaces it

    def forget(self, document: Document) -> None:
        """The document closed: drops its pending computation and clears what the client shows."""
        if not handles(document):
            return
        self._cancel(document.uri)
        self._too_large.discard(document.uri)
        self._send(document.uri, [], None)

    def shutdown(self) -> None:
        for uri in list(self._pending):
            self._cancel(uri)
        self._executor.shutdown(wait=False, cancel_futures=True)

    def _cancel(self, uri: str) -> None:
        task = self._pending.pop(uri, None)
        if task is not None:
            task.cancel()  # a computation already running finishes on its thread, unpublished

    async def _publish_later(self, uri: str) -> None:
        await asyncio.sleep(DEBOUNCE_S)
        snapshot = dataclasses.replace(self._ls.documents.get(uri))  # edits on the loop leave the copy alone
        if snapshot.in_sync and self._within_limit(snapshot):
            loop = asyncio.get_running_loop()
            diagnostics = await loop.run_in_executor(self._executor, diagnose, snapshot, self._ls.encoding)
        else:
            diagnostics = []  # also clears what was shown before the document grew or was lost track of
        if self._version(uri) == snapshot.version:
            self._send(uri, diagnostics, snapshot.version)

    def _within_limit(self, document: Document) -> bool:
        if len(document.text) <= MAX_CHARS:
            self._too_large.discard(document.uri)
            return True
        if document.uri not in self._too_large:
            self._too_large.add(document.uri)
            message = (f"diffusion-infill: no JSON or Markdown diagnostics for {document.uri}: "
                       f"{len(document.text):,} characters, more than {MAX_CHARS:,}")
            log.info("%s", message)
            self._ls.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=message))
        return False

    def _version(self, uri: str) -> int | None:
        try:
            return self._ls.documents.get(uri).version
        except UnknownDocument:
            return None

    def _send(self, uri: str, diagnostics: list[types.Diagnostic], version: int | None) -> None:
        self._ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version))
