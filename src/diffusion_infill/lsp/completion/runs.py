"""Staleness, owned by the server: at most one live completion run per document.

- A request for a new (version, cursor) of a document cancels the document's older run;
  that request is answered with no items at once, and the engine stops within a step.
- An edit or close of the document does the same, and drops its finished result.
- A request identical to the live run (same version, cursor, selection, item count)
  joins it instead of starting another, and gets the live draft re-sent at once.
- The finished result of the latest run is kept per document and answered again for
  an identical request, so a client that re-asks never recomputes.
- A request cancelled by the client ($/cancelRequest) stops its run when no other
  request is waiting on it.
- A run for an Automatic request starts after the request policy's debounce (RequestPolicy.run_delay); an
  edit or another request meanwhile cancels it before its job reaches the engine thread. Nothing else waits:
  clients ask at every key, and answers without a run come at once.
- A request that can be answered without a run (the suggestion cache, the document's draft,
  a quiet character: diffusion_infill.lsp.completion.without_run, which keeps the memory) is answered so;
  a request for several items whose first one is known gets it first, and the engine samples
  only the others, distinct from it.
- A final completion whose confidence is under the request's threshold (the request policy's gate,
  lsp.completion.policy, for an Automatic request) is not offered; the final draft notification then
  carries no text, so a client stops showing the draft.
- A draft whose publication raises is logged, and the request is answered all the same.
Runs live on the asyncio loop; only `Job`s cross to the engine thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from lsprotocol.types import Position

from diffusion_infill.engine.requests import Draft, InfillRequest
from diffusion_infill.lsp.completion.items import SelectedEntry
from diffusion_infill.lsp.completion.policy import RequestPolicy
from diffusion_infill.lsp.completion.sampling import Job
from diffusion_infill.lsp.completion.triggers import Trigger
from diffusion_infill.lsp.completion.without_run import Answer, Suggestion, WithoutRun
from diffusion_infill.lsp.completion.worker import EngineWorker
from diffusion_infill.lsp.settings import ServerSettings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunKey:
    uri: str
    version: int
    cursor: int  # offset of the cursor in the document
    selected: SelectedEntry | None  # the completion menu's selected entry
    samples: int
    trigger: Trigger = Trigger.INVOKED


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
    started: float = field(default_factory=time.monotonic)  # when the run began, for its drafts' elapsed time


# (key, position, draft, milliseconds since the run or the answer began, the final drafts of the items
# answered, in their order: each item's own steps, ms, confidence and source) -> None: sends one
# infill/draft notification
Publish = Callable[[RunKey, Position, Draft, float, list[Draft]], None]


class Runs:
    def __init__(self, worker: EngineWorker, publish: Publish, policy: RequestPolicy | None = None):
        self._worker = worker
        self._publish = publish
        # The one request policy (the server reads it here), replaced at each settings change and model load
        # (adopt); read when applied: a request asked while the model loads is gated as the loaded model's.
        self.policy = policy or RequestPolicy()
        self._live: dict[str, Run] = {}
        self._done: dict[str, tuple[RunKey, list[Draft]]] = {}
        self._no_run = WithoutRun()  # answers without a run, and the memory they come from

    async def complete(self, key: RunKey, request: InfillRequest, position: Position) -> list[Draft]:
        """The final drafts for `key` (the first is the best); empty when superseded."""
        done = self._done.get(key.uri)
        if done is not None and done[0] == key:
            return done[1]
        started = time.monotonic()
        answer = self._no_run.answer(request, self.policy.terms(key.samples, key.trigger))
        if not answer.run:
            return self._without_run(key, position, answer.kept, started)
        run = self._live.get(key.uri)
        if run is not None and run.key == key:
            if run.latest is not None:  # the joining client sees the live state at once
                self._notify(run.key, run.position, run.latest, _since(run.started), [])
        else:
            self.invalidate(key.uri)
            run = self._start(key, request, position, answer)
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

    def adopt(self, settings: ServerSettings) -> None:
        """The request policy of `settings` and of what the worker knows of the model (lsp.completion.policy):
        built at each settings change and at each model load's start and end, read by every request."""
        self.policy = RequestPolicy.of(settings, self._worker.calibration, self._worker.judges_lines)

    def invalidate(self, uri: str) -> None:
        """The document changed or closed: its live run stops and answers empty, its result is dropped."""
        self._done.pop(uri, None)
        run = self._live.get(uri)
        if run is not None:
            self._stop(run)

    def clear(self) -> None:
        """Settings changed: every run and result is stale."""
        for uri in list(self._live) + list(self._done):
            self.invalidate(uri)
        self._no_run.clear()

    def _without_run(self, key: RunKey, position: Position, kept: Suggestion | None, started: float) -> list[Draft]:
        """The answer without a run: the kept completion, or nothing."""
        if kept is None:
            self.invalidate(key.uri)  # an older run of the document is stale all the same
            return []
        return self._from_cache(key, position, kept, started)

    def _from_cache(self, key: RunKey, position: Position, kept: Suggestion, started: float) -> list[Draft]:
        """A final answer with no run: its notification says step 0 (no denoising step ran for it), its
        item the steps that wrote it."""
        self.invalidate(key.uri)
        final = _kept_draft(kept, _since(started))
        offered = [final] if self.policy.gate_for(key.trigger).passes(final.confidence) else []
        self._done[key.uri] = (key, offered)
        answer = replace(final, step=0, text=final.text if offered else "")
        self._notify(key, position, answer, _since(started), offered)
        return offered

    def _start(self, key: RunKey, request: InfillRequest, position: Position, answer: Answer) -> Run:
        """The engine's run for `key`; with a kept completion it samples one item fewer, each distinct from it."""
        loop = asyncio.get_running_loop()
        kept = answer.kept
        job = Job(
            request,
            key.samples - (kept is not None),
            on_draft=lambda draft: loop.call_soon_threadsafe(self._on_draft, run, draft),
            start_text=answer.start_text,
            avoid=() if kept is None else (kept.text,),
        )
        run = Run(key, position, job, loop.create_future(), kept=None if kept is None else _kept_draft(kept, 0.0))
        self._live[key.uri] = run
        delay = self.policy.run_delay(key.trigger)
        if delay > 0:
            loop.call_later(delay, self._submit, run)
        else:
            self._submit(run)
        return run

    def _submit(self, run: Run) -> None:
        """Hands the run's job to the engine thread, unless it went stale during the debounce."""
        if run.job.cancel.is_set():
            return  # _stop answered its requests already
        finished = asyncio.wrap_future(self._worker.complete(run.job))
        finished.add_done_callback(lambda future: self._finish(run, future))

    def _on_draft(self, run: Run, draft: Draft) -> None:
        if run.job.cancel.is_set():
            return  # a late draft of a stale run must not repaint the editor
        run.latest = draft
        if draft.text != run.sent:
            run.sent = draft.text
            self._notify(run.key, run.position, draft, _since(run.started), [])

    def _finish(self, run: Run, future: asyncio.Future[list[Draft] | None]) -> None:
        if self._live.get(run.key.uri) is run:
            del self._live[run.key.uri]
        # Retrieved even for a run already answered: else asyncio logs "Future exception was never retrieved".
        error = None if future.cancelled() else future.exception()
        if run.result.done():
            return  # superseded or cancelled: already answered
        if future.cancelled():
            run.result.set_result(None)
        elif error is not None:
            run.result.set_exception(error)
        else:
            finals = future.result()
            if finals is not None and not run.job.cancel.is_set():
                finals = self._answered(run, finals)
            run.result.set_result(None if run.job.cancel.is_set() else finals)

    def _answered(self, run: Run, finals: list[Draft]) -> list[Draft]:
        """Records the result and notifies the converged text, so drafts end where the answer is;
        returns the completions offered (those the policy's gate lets through)."""
        finals = [run.kept, *finals] if run.kept is not None else finals
        best = next((draft for draft in finals if draft.text), finals[0])
        gate = self.policy.gate_for(run.key.trigger)
        offered = [draft for draft in finals if gate.passes(draft.confidence)]
        self._done[run.key.uri] = (run.key, offered)
        if best.text and run.kept is None:  # else the kept completion stays this context's
            self._no_run.remember(run.job.request, Suggestion(best.text, best.confidence, best.source, best.step))
        shown = next((draft for draft in offered if draft.text), replace(best, text=""))
        if shown is run.kept:  # its notification says step 0, as an answer from memory does; its item, its steps
            shown = replace(shown, step=0)
        run.latest = shown
        self._notify(run.key, run.position, shown, _since(run.started), offered)
        return offered

    def _notify(self, key: RunKey, at: Position, draft: Draft, ms: float, answered: list[Draft]) -> None:
        """Publishes a draft; a publish that raises is logged and the request answered all the same (raised in
        `_finish`, it left the run's result unset: the request never answered)."""
        try:
            self._publish(key, at, draft, ms, answered)
        except Exception:
            log.exception("publishing a draft of %s version %d failed", key.uri, key.version)

    def _stop(self, run: Run) -> None:
        run.job.cancel.set()
        if self._live.get(run.key.uri) is run:
            del self._live[run.key.uri]
        if not run.result.done():
            run.result.set_result(None)


def _kept_draft(kept: Suggestion, ms: float) -> Draft:
    """The suggestion cache's completion as a final draft, with the steps of the run that wrote it,
    answered `ms` after the request."""
    return Draft(
        kept.text, kept.steps, 0.0, final=True, valid=True, confidence=kept.confidence, source=kept.source, ms=ms
    )


def _since(started: float) -> float:
    return (time.monotonic() - started) * 1000
