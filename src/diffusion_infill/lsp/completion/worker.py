"""The engine's own thread: loads the model and runs completions and the code-action repairs that need the model
(Complete table, Regenerate) one at a time, so torch never runs on the asyncio loop nor in pygls' thread pool
(whose threads read stdin). What it holds is lsp.completion.current_engine's; a completion job is
lsp.completion.sampling's.

Jobs are cancelled cooperatively: a job whose flag is set before it starts is skipped,
and a running one stops at the engine's next check, between two denoising steps.

The model stack (torch, transformers: seconds to import) and the OpenAI client are imported
here, on this thread, when a model loads or a server is connected: until then the server
answers what needs no model (initialize, diagnostics, document drafts) at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from diffusion_infill.engine.completion.confidence import Calibration
from diffusion_infill.engine.remote.settings import RemoteSettings
from diffusion_infill.engine.repair.fixes import Fixer
from diffusion_infill.engine.requests import Draft
from diffusion_infill.engine.settings import EngineSettings
from diffusion_infill.lsp.completion.current_engine import (
    CurrentEngine,
    LoadOutcome,
    State,
    TorchStart,
    calibration_beside,
)
from diffusion_infill.lsp.completion.sampling import Job, samples

log = logging.getLogger(__name__)
T = TypeVar("T")


class EngineWorker:
    def __init__(self, trust_remote_code: bool = False, torch_start: TorchStart | None = None):
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine")
        self._current = CurrentEngine(trust_remote_code, torch_start)
        # Work done since start, superseded runs included (written on the engine thread only):
        # the per-job debug line below reports them, for diffusion_infill.bench.typing_burst's wasted-work count.
        self.completions = 0
        self.steps = 0

    @property
    def state(self) -> State:
        return self._current.state

    @property
    def calibration(self) -> Calibration | None:
        """The loaded checkpoint's confidence calibration, or while a local checkpoint loads the one
        beside its weights; None when it has none (or none is loaded or loading)."""
        return self._current.calibration

    @property
    def judges_lines(self) -> bool:
        """Whether the loaded engine judges lines copied from the code itself (engine.completion.judge)."""
        return self._current.judges_lines

    def load(
        self, model: str | None, device: str, dtype: str, settings: EngineSettings, quantize: str = "none"
    ) -> Future[LoadOutcome]:
        """Loads a model (after the jobs already queued); completions queued later wait for it.

        Its calibration (a small file) is read at once, so that answers needing no model step
        (document drafts, the gate) work during the seconds the model stack and the weights take
        to load, from now on."""
        current = self._current
        load = current.begin(calibration_beside(model))
        return self._executor.submit(current.load, load, model, device, dtype, quantize, settings)

    def connect(self, remote: RemoteSettings, settings: EngineSettings) -> Future[LoadOutcome]:
        """Switches to a server's model (engine.remote.client) and probes what it supports; as `load` otherwise."""
        current = self._current
        return self._executor.submit(current.connect, current.begin(None), remote, settings)

    def configure(self, settings: EngineSettings) -> Future[None]:
        """New engine settings for the loaded model, from the next job on."""
        return self._executor.submit(self._current.configure, settings)

    def complete(self, job: Job) -> Future[list[Draft] | None]:
        """The final draft of each sample, or None when cancelled or no model is loaded; RemoteError
        when a remote engine's server fails."""
        return self._executor.submit(self._complete, job)

    def fix(self, action: Callable[[Fixer], T]) -> Future[T]:
        """Runs a code action's engine work (`action` on the current Fixer) after the jobs queued before it."""
        return self._executor.submit(lambda: action(self._current.fixer))

    def shutdown(self, wait: bool = False) -> None:
        """Queued work is dropped; `wait`: until the running job (a model load included) has ended."""
        self._executor.shutdown(wait=wait, cancel_futures=True)

    def _complete(self, job: Job) -> list[Draft] | None:
        try:
            return samples(self._current, job)
        finally:
            self.completions += 1
            self.steps += job.steps
            outcome = "cancelled" if job.cancel.is_set() else "finished"
            log.debug(
                "completion %d %s after %d denoising steps; totals: %d steps in %d completions",
                self.completions,
                outcome,
                job.steps,
                self.steps,
                self.completions,
            )
