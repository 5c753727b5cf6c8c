"""The engine's own thread: loads the model and runs completions and the code-action repairs that need the model
(Complete table, Regenerate) one at a time, so torch never runs on the asyncio loop nor in pygls' thread pool
(whose threads read stdin).

Jobs are cancelled cooperatively: a job whose flag is set before it starts is skipped,
and a running one stops at the engine's next check, between two denoising steps.

The model stack (torch, transformers: seconds to import) and the OpenAI client are imported
here, on this thread, when a model loads or a server is connected: until then the server
answers what needs no model (initialize, diagnostics, document drafts) at once.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from diffusion_infill.engine.checkpoint import ModelLoadError, local_directory
from diffusion_infill.engine.completion.confidence import Calibration
from diffusion_infill.engine.completion.distinct import distinct_samples
from diffusion_infill.engine.remote.errors import RemoteError
from diffusion_infill.engine.remote.settings import RemoteSettings
from diffusion_infill.engine.repair.fixes import Fixer
from diffusion_infill.engine.requests import Draft, InfillRequest
from diffusion_infill.engine.settings import EngineSettings

if TYPE_CHECKING:
    from diffusion_infill.engine.baseline.autoregressive import FimModel
    from diffusion_infill.engine.loading import LoadedModel

log = logging.getLogger(__name__)
T = TypeVar("T")


class CompletionFailed(RuntimeError):
    """The engine raised during a completion (already logged with its traceback); the message says what."""


class State(enum.Enum):
    IDLE = "idle"  # nothing asked yet
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"


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


@dataclass(frozen=True)
class TorchStart:
    """How torch starts in the server's process (the command line's --seed and --threads), set on the engine
    thread before the first model loads."""

    seed: int = 0
    threads: int | None = None  # None: engine.settings.default_threads


@dataclass(frozen=True)
class LoadOutcome:
    source: str  # what was asked for, or what was loaded
    error: str | None = None  # why it could not be loaded; None: loaded
    unreachable: str | None = None  # a remote engine's server did not answer the probe (asked again later)


class EngineWorker:
    def __init__(self, trust_remote_code: bool = False, torch_start: TorchStart | None = None):
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine")
        self._trust_remote_code = trust_remote_code
        self._torch_start = torch_start  # None: torch is left as the process set it (tests)
        self._loaded: LoadedModel | FimModel | None = None
        self._settings = EngineSettings()
        self._engine = None
        self._fixer = Fixer(None)  # deterministic repairs only, until a canvas-trained model is loaded
        self._loading_calibration: Calibration | None = None  # the checkpoint's, read before its weights
        self.state = State.IDLE
        # Work done since start, superseded runs included (written on the engine thread only):
        # the per-job debug line below reports them, for diffusion_infill.bench.typing_burst's wasted-work count.
        self.completions = 0
        self.steps = 0

    @property
    def calibration(self) -> Calibration | None:
        """The loaded checkpoint's confidence calibration, or while a local checkpoint loads the one
        beside its weights; None when it has none (or none is loaded or loading)."""
        engine = self._engine  # set by the engine thread: read once
        return self._loading_calibration if engine is None else getattr(engine, "calibration", None)

    @property
    def judges_lines(self) -> bool:
        """Whether the loaded engine judges lines copied from the code itself (engine.completion.judge)."""
        return getattr(self._engine, "revision", None) is not None

    @property
    def min_confidence(self) -> float:
        """The threshold calibrated with the loaded checkpoint; 0 (everything) when it has none."""
        return self.calibration.threshold if self.calibration is not None else 0.0

    @property
    def quiet_after(self) -> str:
        """The quiet characters calibrated with the loaded checkpoint; none when it has none."""
        return self.calibration.quiet_after if self.calibration is not None else ""

    def load(
        self, model: str | None, device: str, dtype: str, settings: EngineSettings, quantize: str = "none"
    ) -> Future[LoadOutcome]:
        """Loads a model (after the jobs already queued); completions queued later wait for it.

        Its calibration (a small file) is read at once, so that answers needing no model step
        (document drafts, the gate) work during the seconds the model stack and the weights take
        to load: from now on when nothing is loaded, else once the loaded engine is dropped."""
        self.state = State.LOADING
        calibration = _calibration_beside(model)
        self._loading_calibration = calibration
        return self._executor.submit(self._load, model, device, dtype, quantize, settings, calibration)

    def connect(self, remote: RemoteSettings, settings: EngineSettings) -> Future[LoadOutcome]:
        """Switches to a server's model (engine.remote.client) and probes what it supports; as `load` otherwise."""
        self.state = State.LOADING
        return self._executor.submit(self._connect, remote, settings)

    def configure(self, settings: EngineSettings) -> Future[None]:
        """New engine settings for the loaded model, from the next job on."""
        return self._executor.submit(self._configure, settings)

    def complete(self, job: Job) -> Future[list[Draft] | None]:
        """The final draft of each sample, or None when cancelled or no model is loaded; RemoteError
        when a remote engine's server fails."""
        return self._executor.submit(self._complete, job)

    def fix(self, action: Callable[[Fixer], T]) -> Future[T]:
        """Runs a code action's engine work (`action` on the current Fixer) after the jobs queued before it."""
        return self._executor.submit(lambda: action(self._fixer))

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)

    @property
    def _remote(self) -> bool:
        """Whether the engine is a server's (engine.remote.client): the one engine without a loaded model."""
        return self._engine is not None and self._loaded is None

    def _drop_engine(self) -> None:
        if self._remote:
            self._engine.close()
        self._loaded = self._engine = None

    def _connect(self, remote: RemoteSettings, settings: EngineSettings) -> LoadOutcome:
        from diffusion_infill.engine.remote.client import RemoteEngine, RemoteRepairer

        self._drop_engine()
        self._loading_calibration = None
        self._settings = settings
        source = f"{remote.model} at {remote.url}"
        if not remote.url or not remote.model:
            self.state = State.FAILED
            self._fixer = Fixer(None, "no server is configured")
            return LoadOutcome(source, "the openai engine needs a server URL and a model name")
        self._engine = RemoteEngine(remote, settings)
        self._fixer = Fixer(RemoteRepairer(self._engine), model_fixes=False)
        self.state = State.READY
        try:
            self._engine.probe()
        except RemoteError as error:  # the server may come up later: each completion probes again until it does
            return LoadOutcome(source, unreachable=str(error))
        return LoadOutcome(source)

    def _load(
        self,
        model: str | None,
        device: str,
        dtype: str,
        quantize: str,
        settings: EngineSettings,
        calibration: Calibration | None,
    ) -> LoadOutcome:
        self._loading_calibration = calibration  # what `calibration` answers until the weights are in
        self._drop_engine()
        self._fixer = Fixer(None, "the model could not be loaded")  # until it is: deterministic repairs only
        self._settings = settings
        try:
            self._start_torch()
            from diffusion_infill.engine.factory import load_any
            from diffusion_infill.engine.repair.diffusion import DiffusionRepairer

            self._loaded = load_any(model, device, dtype, trust_remote_code=self._trust_remote_code, quantize=quantize)
            self._engine = self._created(settings)
            problem = self._loaded.canvas_problem
            self._fixer = Fixer(None, problem) if problem else Fixer(DiffusionRepairer(self._loaded), model_fixes=False)
        except ModelLoadError as error:
            self._loading_calibration, self.state = None, State.FAILED
            return LoadOutcome(model or "the embedded model", str(error))
        except Exception as error:  # e.g. a CUDA device on a machine without one: torch raises many kinds
            log.exception("loading %s on %s failed", model or "the embedded model", device)
            self._loading_calibration, self.state = None, State.FAILED
            return LoadOutcome(model or "the embedded model", f"{type(error).__name__}: {error} (device {device})")
        self.state = State.READY
        return LoadOutcome(self._loaded.source)

    def _start_torch(self) -> None:
        """Seeds torch and limits its threads, before the first model loads; later loads leave them."""
        if self._torch_start is not None:
            from diffusion_infill.engine.devices import start_torch

            start_torch(self._torch_start.seed, self._torch_start.threads)
            self._torch_start = None

    def _configure(self, settings: EngineSettings) -> None:
        self._settings = settings
        if self._remote:
            self._engine.settings = settings
        elif self._loaded is not None:
            self._engine = self._created(settings)

    def _created(self, settings: EngineSettings):
        """A fresh engine on the loaded model."""
        from diffusion_infill.engine.factory import create_engine

        return create_engine(self._loaded, settings)

    def _complete(self, job: Job) -> list[Draft] | None:
        try:
            return self._samples(job)
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

    def _samples(self, job: Job) -> list[Draft] | None:
        """Distinct completions (engine.completion.distinct); None when cancelled or no model is loaded."""

        def draw(attempt: int) -> Draft | None:
            if job.cancel.is_set() or self._engine is None:
                return None
            return self._sample(job, first=attempt == 0)

        return distinct_samples(draw, job.samples, job.avoid)

    def _sample(self, job: Job, first: bool) -> Draft | None:
        """One completion: the final draft, or None when cancelled; CompletionFailed when the engine raised."""
        start_text = job.start_text if first else None
        request = job.request if first else replace(job.request, copied_lines=False)
        try:
            return self._run(job, request, first, start_text)
        except RemoteError:
            raise  # the server's failure, not the engine's: nothing to reset, the server tells the user
        except Exception as error:
            # Not retried: a retry doubles the wait for a failure that is usually deterministic
            # (out of memory, a checkpoint that yields NaN) and hides engine bugs that only the
            # first call hits. The engine keeps state between calls (the prefix KV cache), so the
            # next request gets a fresh one from the same weights.
            log.error("completion failed: %s: %s", type(error).__name__, error, exc_info=True)
            if self._loaded is not None:
                self._engine = self._created(self._settings)
            message = f"{type(error).__name__}: {error}"
        # Raised outside the except block, so the traceback (and on a GPU the tensors its frames
        # hold after an out-of-memory error) is released before the next job runs.
        if self._loaded is not None:  # a server's engine holds no tensors (and torch may not be imported)
            _release_gpu_cache()
        raise CompletionFailed(message)

    def _run(self, job: Job, request: InfillRequest, first: bool, start_text: str | None) -> Draft | None:
        ran = 0  # Draft.step of the latest draft: decoder passes so far, also for a run cancelled midway
        try:
            for draft in self._engine.complete(request, job.cancel.is_set, start_text):
                ran = draft.step
                if draft.final:
                    return replace(draft, ms=(time.monotonic() - job.started) * 1000)
                if first:
                    job.on_draft(draft)
            return None
        finally:
            job.steps += ran


def _release_gpu_cache() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _calibration_beside(model: str | None) -> Calibration | None:
    """A local checkpoint's calibration, read before its weights; None for a hub id (its folder is
    known only once loaded, and then its engine has none) or a path that cannot be expanded (the
    load reports it)."""
    try:
        return Calibration.load(local_directory(model))
    except RuntimeError:
        return None
