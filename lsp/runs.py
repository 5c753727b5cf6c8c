"""Staleness, owned by the server: at most one live completion run per document.

- A request for a new (version, cursor) of a document cancels the document's older run;
  that request is answered with no items at once, and the engine stops within a step.
- An edit or close of the document does the same; a close also drops what is kept for it.
- A request identical to the live run (same version, cursor, selection, item count)
  joins it instead of starting another, and gets the live draft re-sent at once.
- The finished result of the latest run is kept per document and answered again for
  an identical request, so a client that re-asks never recomputes.
- A request cancelled by the client ($/cancelRequest) stops its run when no other
  request is waiting on it.
- A context gets one sample: a single-item request whose context the engine's suggestion
  cache knows (asked before, or a shown suggestion typed along) is answered from it, with no
  run; a request for several items gets the kept completion first and the engine samples only
  the others, and the kept one stays the context's (an Automatic request after the trigger key
  gets the same suggestion and the same gate decision as before it).
- A single-item request of a key with `document_drafts` that the cache cannot answer is
  answered with the document's draft (engine.completion.document_drafts), with no run, when
  its estimate passes the threshold and the model is calibrated: only then do the model's
  completions have estimates on the same scale, and an uncalibrated model (a real
  DiffusionGemma, a server's model) is taken to know better than a repetition.
- Otherwise a `quiet` request (Automatic, right after a character that rarely starts an
  accepted completion, engine.completion.triggers) is answered with nothing, with no run.
- A final completion whose confidence is under the request's threshold is not offered;
  the final draft notification then carries no text, so a client stops showing the draft.
Runs live on the asyncio loop; only `Job`s cross to the engine thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace

from lsprotocol.types import Position

from engine.completion import document_drafts
from engine.completion.confidence import passes
from engine.completion.suggestion_cache import Suggestion, SuggestionCache
from engine.drafts import Draft, InfillRequest
from lsp.worker import EngineWorker, Job


@dataclass(frozen=True)
class RunKey:
    uri: str
    version: int
    cursor: int  # offset of the cursor in the document
    selected: tuple[int, int, str] | None  # the completion menu's selected entry: start, end, text
    samples: int
    min_confidence: float | None = 0.0  # completions estimated below this are not offered; None: the model's own
    document_drafts: bool = False  # may be answered with what followed the same tokens earlier in the document
    quiet: bool = False  # answered without a run unless the cache or the document has an answer (engine.triggers)


@dataclass
class Run:
    key: RunKey
    position: Position  # the cursor as the client sent it, echoed in draft notifications
    job: Job
    result: asyncio.Future[list[Draft] | None]
    latest: Draft | None = None  # the live state
    sent: str | None = None  # text of the last draft notified, so only changes are sent
    waiters: int = 0
    kept: Draft | None = None  # the suggestion cache's completion for this context: the first item


# (key, position, draft) -> None: sends one infill/draft notification
Publish = Callable[[RunKey, Position, Draft], None]


def continuation(previous: tuple[InfillRequest, str] | None, request: InfillRequest) -> str | None:
    """The rest of the previous completion when the user has typed its beginning since."""
    if previous is None:
        return None
    before, completion = previous
    if request.suffix != before.suffix or not request.prefix.startswith(before.prefix):
        return None
    typed = request.prefix[len(before.prefix):]
    if not completion.startswith(typed) or len(completion) == len(typed):
        return None
    return completion[len(typed):]


class Runs:
    def __init__(self, worker: EngineWorker, publish: Publish):
        self._worker = worker
        self._publish = publish
        self._live: dict[str, Run] = {}
        self._done: dict[str, tuple[RunKey, list[Draft]]] = {}
        self._previous: dict[str, tuple[InfillRequest, str]] = {}  # last completion per document
        self.suggestions = SuggestionCache()

    async def complete(self, key: RunKey, request: InfillRequest, position: Position) -> list[Draft]:
        """The final drafts for `key` (the first is the best); empty when superseded."""
        done = self._done.get(key.uri)
        if done is not None and done[0] == key:
            return done[1]
        kept = self.suggestions.lookup(request, self._threshold(key))
        if kept is None and key.samples == 1 and key.document_drafts and self._worker.calibration is not None:
            kept = self._document_draft(request, self._threshold(key))
        if kept is not None and key.samples == 1:
            return self._from_cache(key, position, kept)
        if key.quiet:
            self.invalidate(key.uri)  # an older run of the document is stale all the same
            return []
        run = self._live.get(key.uri)
        if run is not None and run.key == key:
            if run.latest is not None:
                self._publish(run.key, run.position, run.latest)  # the joining client sees the live state at once
        else:
            self.invalidate(key.uri)
            run = self._start(key, request, position, kept)
        run.waiters += 1
        try:
            finals = await asyncio.shield(run.result)
        except asyncio.CancelledError:
            run.waiters -= 1
            if run.waiters == 0:
                self._stop(run)
            raise
        run.waiters -= 1
        return finals or []

    def invalidate(self, uri: str) -> None:
        """The document changed or closed: its live run stops and answers empty, its result is dropped."""
        self._done.pop(uri, None)
        run = self._live.get(uri)
        if run is not None:
            self._stop(run)

    def forget(self, uri: str) -> None:
        """The document closed: as for an edit, and its last completion (kept for typing along) goes too."""
        self.invalidate(uri)
        self._previous.pop(uri, None)

    def clear(self) -> None:
        """Settings changed: every run and result is stale."""
        for uri in list(self._live) + list(self._done):
            self.invalidate(uri)
        self._previous.clear()
        self.suggestions.clear()

    def _threshold(self, key: RunKey) -> float:
        """The request's threshold; read when it is applied, since the model may load in between."""
        return self._worker.min_confidence if key.min_confidence is None else key.min_confidence

    def _document_draft(self, request: InfillRequest, threshold: float) -> Suggestion | None:
        """The document's draft at the cursor when its estimate passes `threshold`, kept for typing along."""
        draft = document_drafts.offer(request)
        if draft is None:
            return None
        found = Suggestion(draft.text, document_drafts.estimate(draft, request.prefix))
        if not passes(found.confidence, threshold):
            return None
        self.suggestions.store(request, found)
        return found

    def _from_cache(self, key: RunKey, position: Position, kept: Suggestion) -> list[Draft]:
        """A final answer with no run and no denoising step (Draft.step 0)."""
        self.invalidate(key.uri)
        final = _kept_draft(kept)
        offered = [final] if passes(final.confidence, self._threshold(key)) else []
        self._done[key.uri] = (key, offered)
        self._publish(key, position, final if offered else replace(final, text=""))
        return offered

    def _start(self, key: RunKey, request: InfillRequest, position: Position, kept: Suggestion | None) -> Run:
        """The engine's run for `key`; with a kept completion it samples one item fewer and no warm
        start (which would lead back to the kept completion)."""
        loop = asyncio.get_running_loop()
        start_text = None if kept is not None else continuation(self._previous.get(key.uri), request)
        job = Job(request, key.samples - (kept is not None),
                  on_draft=lambda draft: loop.call_soon_threadsafe(self._on_draft, run, draft), start_text=start_text)
        run = Run(key, position, job, loop.create_future(), kept=None if kept is None else _kept_draft(kept))
        self._live[key.uri] = run
        finished = asyncio.wrap_future(self._worker.complete(job))
        finished.add_done_callback(lambda future: self._finish(run, future))
        return run

    def _on_draft(self, run: Run, draft: Draft) -> None:
        if run.job.cancel.is_set():
            return  # a late draft of a stale run must not repaint the editor
        run.latest = draft
        if draft.text != run.sent:
            run.sent = draft.text
            self._publish(run.key, run.position, draft)

    def _finish(self, run: Run, future: asyncio.Future[list[Draft] | None]) -> None:
        if self._live.get(run.key.uri) is run:
            del self._live[run.key.uri]
        if run.result.done():
            return  # superseded or cancelled: already answered
        if future.cancelled():
            run.result.set_result(None)
        elif future.exception() is not None:
            run.result.set_exception(future.exception())
        else:
            finals = future.result()
            if finals is not None and not run.job.cancel.is_set():
                finals = self._answered(run, finals)
            run.result.set_result(None if run.job.cancel.is_set() else finals)

    def _answered(self, run: Run, finals: list[Draft]) -> list[Draft]:
        """Records the result and notifies the converged text, so drafts end where the answer is;
        returns the completions offered (those the confidence threshold lets through)."""
        finals = [run.kept, *finals] if run.kept is not None else finals
        best = next((draft for draft in finals if draft.text), finals[0])
        offered = [draft for draft in finals if passes(draft.confidence, self._threshold(run.key))]
        self._done[run.key.uri] = (run.key, offered)
        if best.text:
            self._previous[run.key.uri] = (run.job.request, best.text)
        if best.text and run.kept is None:  # else the kept completion stays this context's
            self.suggestions.store(run.job.request, Suggestion(best.text, best.confidence))
        shown = next((draft for draft in offered if draft.text), replace(best, text=""))
        run.latest = shown
        self._publish(run.key, run.position, shown)
        return offered

    def _stop(self, run: Run) -> None:
        run.job.cancel.set()
        if self._live.get(run.key.uri) is run:
            del self._live[run.key.uri]
        if not run.result.done():
            run.result.set_result(None)


def _kept_draft(kept: Suggestion) -> Draft:
    """The suggestion cache's completion as a final draft that took no denoising step (Draft.step 0)."""
    return Draft(kept.text, 0, 0.0, final=True, valid=True, confidence=kept.confidence)
