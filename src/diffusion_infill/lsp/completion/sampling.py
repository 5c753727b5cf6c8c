"""One completion job on the engine thread (lsp.completion.worker): its distinct samples
(engine.completion.distinct), the first one streaming its drafts, each stopping at the engine's next
check once the job is cancelled; a sample whose engine raised is logged once, its engine renewed
and the job failed (CompletionFailed), never retried."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from diffusion_infill.engine.completion.distinct import distinct_samples
from diffusion_infill.engine.remote.errors import RemoteError
from diffusion_infill.engine.requests import Draft, InfillRequest
from diffusion_infill.lsp.completion.current_engine import CurrentEngine, release_gpu_cache

log = logging.getLogger(__name__)


class CompletionFailed(RuntimeError):
    """The engine raised during a completion (already logged with its traceback); the message says what."""


@dataclass
class Job:
    request: InfillRequest
    samples: int  # distinct completions wanted; the first one drawn streams its drafts
    on_draft: Callable[[Draft], None]  # called on the engine thread
    start_text: str | None = None  # the first sample's warm start: the rest of a completion typed along
    avoid: tuple[str, ...] = ()  # completions the caller already offers: the samples differ from them
    cancel: threading.Event = field(default_factory=threading.Event)
    steps: int = 0  # denoising steps (decoder passes) this job ran, all samples, cancelled ones included
    started: float = field(default_factory=time.monotonic)  # for each sample's Draft.ms


def samples(current: CurrentEngine, job: Job) -> list[Draft] | None:
    """Distinct completions (engine.completion.distinct); None when cancelled or no model is loaded."""

    def draw(attempt: int) -> Draft | None:
        if job.cancel.is_set() or current.engine is None:
            return None
        return _sample(current, job, first=attempt == 0)

    return distinct_samples(draw, job.samples, job.avoid)


def _sample(current: CurrentEngine, job: Job, first: bool) -> Draft | None:
    """One completion: the final draft, or None when cancelled; CompletionFailed when the engine raised."""
    start_text = job.start_text if first else None
    request = job.request if first else replace(job.request, document_drafts=False)
    try:
        return _run(current, job, request, first, start_text)
    except RemoteError:
        raise  # the server's failure, not the engine's: nothing to reset, the server tells the user
    except Exception as error:
        # Not retried: a retry doubles the wait for a failure that is usually deterministic
        # (out of memory, a checkpoint that yields NaN) and hides engine bugs that only the
        # first call hits. The engine keeps state between calls (the prefix KV cache), so the
        # next request gets a fresh one from the same weights.
        log.error("completion failed: %s: %s", type(error).__name__, error, exc_info=True)
        current.renew()
        message = f"{type(error).__name__}: {error}"
    # Raised outside the except block, so the traceback (and on a GPU the tensors its frames
    # hold after an out-of-memory error) is released before the next job runs.
    if current.holds_tensors:
        release_gpu_cache()
    raise CompletionFailed(message)


def _run(current: CurrentEngine, job: Job, request: InfillRequest, first: bool, start_text: str | None) -> Draft | None:
    ran = 0  # Draft.step of the latest draft: decoder passes so far, also for a run cancelled midway
    try:
        for draft in current.engine.complete(request, job.cancel.is_set, start_text):
            ran = draft.step
            if draft.final:
                return replace(draft, ms=(time.monotonic() - job.started) * 1000)
            if first:
                job.on_draft(draft)
        return None
    finally:
        job.steps += ran
