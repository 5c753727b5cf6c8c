"""textDocument/publishDiagnostics for JSON and Markdown documents.

JSON: the damage tree-sitter-json and `json.loads` find (diffusion_infill.engine.repair.jsonfix.damage); in
JSONC documents comments and trailing commas are allowed, so they are blanked out first.
Markdown: the structure rules (diffusion_infill.engine.repair.markdown_rules). Each diagnostic carries our
`source`, so a code action request that names it is offered the matching fix
(diffusion_infill.lsp.fixes.targets).

Both look at the whole document: milliseconds for a small one, seconds for a large one
(docs/reliability.md), most of it holding the GIL. So `Publisher` computes them in a process of
their own (diffusion_infill.lsp.diagnostics.process), a while after the last edit of a burst (at
least as long as the document's last computation took, so typing in a large one does not queue
computation after computation), for the text of that version, and publishes them only if the
document still has that version, at most `MAX_ITEMS` of them; Markdown documents over
`MAX_CHARS` and JSON ones over `MAX_JSON_CHARS` get none. A newer version stops a JSON
computation under way (Markdown's runs to its end, unpublished). A computation past the worker deadline
(`serve --worker-timeout`: a stopped or runaway process) has its process replaced and the document checked
again, once per version: a version that overruns twice waits for the next edit.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from lsprotocol import types

from diffusion_infill.engine.repair import jsonfix, markdown_rules
from diffusion_infill.lsp.diagnostics.process import DiagnosisProcess, WorkerDied, WorkerTimedOut
from diffusion_infill.lsp.languages import JSON_LANGUAGES, JSONC_LANGUAGES, MARKDOWN_LANGUAGES, SOURCE
from diffusion_infill.lsp.text.documents import Document, Documents
from diffusion_infill.lsp.text.rope import Rope

# Characters. The rules cost about a second per 2 MB of broken JSON or of Markdown; above this a
# document would keep the diagnostics process busy for seconds at every edit, for a file that is
# generated data far more often than something a person edits by hand.
MAX_CHARS = 2_000_000
# JSON's rules are linear: about 5 s for 10 MB with one error on this project's shared 2-core machine.
MAX_JSON_CHARS = 16_000_000
MAX_ITEMS = 300  # diagnostics published per document; one more says how many were left out
# Seconds after an edit before computing: a burst of keystrokes computes the last version once.
DEBOUNCE_S = 0.15
log = logging.getLogger(__name__)


def _range(document: Document, start: int, end: int, encoding: str) -> types.Range:
    lines = document.lines
    return types.Range(lines.position(start, encoding), lines.position(end, encoding))


@dataclass(frozen=True)
class _DocumentProblem:
    """One problem, before its offsets become an LSP range."""

    start: int
    end: int
    message: str
    severity: types.DiagnosticSeverity
    code: str


def _problems(document: Document, cancelled: Callable[[], bool]) -> list[_DocumentProblem]:
    text = str(document.text)
    if document.language_id in JSON_LANGUAGES | JSONC_LANGUAGES and text.strip():
        if document.language_id in JSONC_LANGUAGES:
            text = jsonfix.strip_jsonc(text)  # same offsets
        return [
            _DocumentProblem(item.start, item.end, item.message, types.DiagnosticSeverity.Error, "json")
            for item in jsonfix.damage(text, cancelled)
        ]
    if document.language_id in MARKDOWN_LANGUAGES:
        return [
            _DocumentProblem(
                problem.start,
                problem.end,
                problem.message,
                types.DiagnosticSeverity.Warning,
                f"markdown-{problem.rule}",
            )
            for problem in markdown_rules.problems(text)
        ]
    return []


def _never() -> bool:
    return False


def diagnose(document: Document, encoding: str, cancelled: Callable[[], bool] = _never) -> list[types.Diagnostic]:
    """The problems of a JSON or Markdown document, the first MAX_ITEMS of them and one that counts
    the rest (an editor lists them all, and no one reads 4,000); empty for other languages.
    jsonfix.Cancelled once `cancelled()` says so (JSON only: the Markdown rules are not asked)."""
    problems = _problems(document, cancelled)
    shown, rest = problems[:MAX_ITEMS], problems[MAX_ITEMS:]
    if rest:
        more = f"{len(rest):,} more problems from here on are not listed"
        shown.append(replace(rest[0], message=f"{more} (the first: {rest[0].message})"))
    return [
        types.Diagnostic(
            range=_range(document, item.start, item.end, encoding),
            message=item.message,
            severity=item.severity,
            source=SOURCE,
            code=item.code,
        )
        for item in shown
    ]


def handles(document: Document) -> bool:
    return document.language_id in JSON_LANGUAGES | JSONC_LANGUAGES | MARKDOWN_LANGUAGES


@dataclass(frozen=True)
class Payload:
    """What the diagnostics process is sent: one version of a document, as plain data."""

    uri: str
    language_id: str
    version: int
    pieces: tuple[str, ...]  # the text's (lsp.text.rope): joined in the diagnostics process, not on the event loop
    encoding: str  # of the positions in the ranges


@dataclass(frozen=True)
class Diagnosed:
    diagnostics: list[types.Diagnostic]
    seconds: float  # the computation's own, in the process


def _payload(document: Document, encoding: str) -> Payload:
    return Payload(document.uri, document.language_id, document.version, document.text.pieces, encoding)


def _diagnose_payload(payload: Payload, cancelled: Callable[[], bool]) -> Diagnosed:
    """In the diagnostics process: `diagnose`, ranges included (300 positions on a long line outside
    ASCII still cost encodes the event loop need not pay)."""
    started = time.monotonic()
    document = Document(payload.uri, payload.language_id, payload.version, Rope(pieces=payload.pieces))
    return Diagnosed(diagnose(document, payload.encoding, cancelled), time.monotonic() - started)


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
    """Diagnostics per document: debounced, computed in another process, never for a stale version."""

    def __init__(self, ls: Host, deadline: float | None = None):
        self._ls = ls
        # One process is enough: each document computes only its latest version, one at a time.
        self._process = DiagnosisProcess("diagnostics", deadline)  # deadline: seconds a computation may take
        self._pending: dict[str, asyncio.Task] = {}  # per URI: waiting out the burst, or computing
        self._too_large: set[str] = set()  # URIs already told they get no diagnostics
        self._took: dict[str, float] = {}  # per URI: seconds its last computation took
        self._overran: dict[str, int] = {}  # per URI: the version whose computation overran the deadline
        self._shut_down = False

    def schedule(self, document: Document) -> None:
        """Publishes the document's diagnostics once its edits pause; replaces a pending computation."""
        self._cancel(document.uri)  # also when reopened in a language without diagnostics
        if self._shut_down or not handles(document):
            return
        task = asyncio.ensure_future(self._publish_later(document.uri))
        task.add_done_callback(_report_failure)
        self._pending[document.uri] = task  # kept when done: the next edit or the close replaces it

    def forget(self, document: Document) -> None:
        """The document closed: drops its pending computation and clears what the client shows."""
        self._cancel(document.uri)
        if not handles(document):
            return
        self._too_large.discard(document.uri)
        self._took.pop(document.uri, None)
        self._overran.pop(document.uri, None)
        self._send(document.uri, [], None)

    def shutdown(self) -> None:
        """No more computations: the one running stops, the worker process ends."""
        self._shut_down = True
        for uri in list(self._pending):
            self._cancel(uri)
        self._process.shutdown()

    def _cancel(self, uri: str) -> None:
        task = self._pending.pop(uri, None)
        if task is not None and not self._process.stop(task):
            task.cancel()  # not computing yet; one computing ends by itself (stopped, or stale) unpublished

    async def _publish_later(self, uri: str) -> None:
        await asyncio.sleep(max(DEBOUNCE_S, self._took.get(uri, 0.0)))
        document = self._ls.documents.get(uri)  # open: a close or a shutdown cancels this before it computes
        version = document.version
        if document.in_sync and self._within_limit(document):
            diagnostics = await self._computed(_payload(document, self._ls.encoding))
            if diagnostics is None:
                return
        else:
            diagnostics = []  # also clears what was shown before the document grew or was lost track of
        # Still this document's latest computation: every edit and reopening schedules a new one in its
        # place (a version alone could not tell: a reopened document starts again at 1), a close and the
        # shutdown drop it.
        if self._pending.get(uri) is asyncio.current_task():
            self._send(uri, diagnostics, version)

    async def _computed(self, payload: Payload) -> list[types.Diagnostic] | None:
        """The diagnostics of `payload`, computed in the diagnostics process; None when a newer version
        stopped them, or when the process died: nothing was checked, so nothing is published (an empty
        list would say "no problems"); the client's log says so, and the next computation starts another."""
        log.debug("diagnosing %s version %d (%d pieces)", payload.uri, payload.version, len(payload.pieces))
        try:
            diagnosed = await self._process.run(asyncio.current_task(), _diagnose_payload, payload)
        except jsonfix.Cancelled:
            log.debug("stopped diagnosing %s version %d", payload.uri, payload.version)
            return None
        except WorkerTimedOut as overran:
            self._again(payload, str(overran))
            return None
        except WorkerDied:
            message = (
                f"diffusion-infill: could not check {payload.uri} version {payload.version}: the diagnostics "
                "process ended; the next edit checks it again"
            )
            self._ls.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=message))
            return None
        self._took[payload.uri] = diagnosed.seconds
        log.debug(
            "diagnosed %s version %d: %d diagnostics in %.2f s",
            payload.uri,
            payload.version,
            len(diagnosed.diagnostics),
            diagnosed.seconds,
        )
        return diagnosed.diagnostics

    def _again(self, payload: Payload, why: str) -> None:
        """The computation overran the deadline: the version is checked again by a fresh process, once."""
        again = self._overran.get(payload.uri) != payload.version
        self._overran[payload.uri] = payload.version
        then = "checking it again" if again else "the next edit checks it again"
        message = f"diffusion-infill: could not check {payload.uri} version {payload.version}: {why}; {then}"
        log.warning("%s", message)
        self._ls.window_log_message(types.LogMessageParams(type=types.MessageType.Warning, message=message))
        if again:  # after this task has ended: schedule replaces the document's pending task
            asyncio.get_running_loop().call_soon(self._recheck, payload.uri, payload.version)

    def _recheck(self, uri: str, version: int) -> None:
        document = self._ls.documents.get(uri) if uri in self._pending else None  # closed meanwhile: not pending
        if document is not None and document.version == version and self._pending[uri].done():
            self.schedule(document)

    def _within_limit(self, document: Document) -> bool:
        limit = MAX_JSON_CHARS if document.language_id in JSON_LANGUAGES | JSONC_LANGUAGES else MAX_CHARS
        if len(document.text) <= limit:
            self._too_large.discard(document.uri)
            return True
        if document.uri not in self._too_large:
            self._too_large.add(document.uri)
            message = (
                f"diffusion-infill: no JSON or Markdown diagnostics for {document.uri}: "
                f"{len(document.text):,} characters, more than {limit:,}"
            )
            log.info("%s", message)
            self._ls.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=message))
        return False

    def _send(self, uri: str, diagnostics: list[types.Diagnostic], version: int | None) -> None:
        self._ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )
