"""The engine that completions and the model's repairs run on, held by the engine thread
(lsp.completion.worker): a loaded checkpoint's or a server's (engine.remote.client), swapped when the
settings name another model, renewed after a failed completion, and the confidence calibration it answers
with (read before the weights, so that the gate works while they load).

The engine, the fixer and the loaded model are written on the engine thread only. The load's bookkeeping
(its state, the number of loads asked for, the calibration read before the weights) has two writers: a
load's start, on the event loop (`begin`), and its end, on the engine thread; both hold `_lock`, so a start
cannot slip between an end's check that no newer load was asked for and its write of the state."""

from __future__ import annotations

import enum
import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from diffusion_infill.engine.checkpoint import ModelLoadError, local_directory
from diffusion_infill.engine.completion.confidence import Calibration
from diffusion_infill.engine.remote.errors import RemoteError
from diffusion_infill.engine.remote.settings import RemoteSettings
from diffusion_infill.engine.repair.fixes import Fixer
from diffusion_infill.engine.settings import EngineSettings

if TYPE_CHECKING:
    from diffusion_infill.engine.baseline.autoregressive import FimModel
    from diffusion_infill.engine.loading import LoadedModel

log = logging.getLogger(__name__)


class State(enum.Enum):
    IDLE = "idle"  # nothing asked yet
    LOADING = "loading"
    READY = "ready"
    FAILED = "failed"


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


class CurrentEngine:
    def __init__(self, trust_remote_code: bool = False, torch_start: TorchStart | None = None):
        self._trust_remote_code = trust_remote_code
        self._torch_start = torch_start  # None: torch is left as the process set it (tests)
        self._loaded: LoadedModel | FimModel | None = None
        self._settings = EngineSettings()
        self.engine = None
        self.fixer = Fixer(None)  # deterministic repairs only, until a canvas-trained model is loaded
        self._lock = threading.Lock()  # held to write the three below (the module's docstring)
        self.loading_calibration: Calibration | None = None  # the checkpoint's, read before its weights
        self.state = State.IDLE
        self.loads = 0  # loads and connects asked for: only the latest one's end sets `state`

    def begin(self, calibration: Calibration | None) -> int:
        """A load or connect is asked for (on the event loop), with the calibration beside its weights:
        the state is LOADING until the end of this one, the latest; returns its number."""
        with self._lock:
            self.state, self.loading_calibration = State.LOADING, calibration
            self.loads += 1
            return self.loads

    @property
    def calibration(self) -> Calibration | None:
        """The loaded checkpoint's confidence calibration, or while a local checkpoint loads the one
        beside its weights; None when it has none (or none is loaded or loading)."""
        with self._lock:
            if self.state is State.LOADING:
                return self.loading_calibration
        return getattr(self.engine, "calibration", None)

    @property
    def judges_lines(self) -> bool:
        """Whether the loaded engine judges lines copied from the code itself (engine.completion.judge)."""
        return self.state is State.READY and getattr(self.engine, "revision", None) is not None

    @property
    def holds_tensors(self) -> bool:
        """Whether a model is loaded in this process: a server's engine holds no tensors (and torch may not
        be imported)."""
        return self._loaded is not None

    @property
    def _remote(self) -> bool:
        """Whether the engine is a server's (engine.remote.client): the one engine without a loaded model."""
        return self.engine is not None and self._loaded is None

    def _drop(self) -> None:
        if self._remote:
            self.engine.close()
        self._loaded = self.engine = None

    def _end(self, load: int, state: State) -> None:
        """A load's end: it sets the state (READY or FAILED) unless a newer load was asked for meanwhile: then
        the state stays LOADING, and completions asked meanwhile wait for that one."""
        with self._lock:
            if load == self.loads:
                self.state = state

    def connect(self, load: int, remote: RemoteSettings, settings: EngineSettings) -> LoadOutcome:
        from diffusion_infill.engine.remote.client import RemoteEngine, RemoteRepairer

        self._drop()
        self._settings = settings
        source = f"{remote.model} at {remote.url}"
        if not remote.url or not remote.model:
            self._end(load, State.FAILED)
            self.fixer = Fixer(None, "no server is configured")
            return LoadOutcome(source, "the openai engine needs a server URL and a model name")
        self.engine = RemoteEngine(remote, settings)
        self.fixer = Fixer(RemoteRepairer(self.engine), model_fixes=False)
        self._end(load, State.READY)
        try:
            self.engine.probe()
        except RemoteError as error:  # the server may come up later: each completion probes again until it does
            return LoadOutcome(source, unreachable=str(error))
        return LoadOutcome(source)

    def load(
        self, load: int, model: str | None, device: str, dtype: str, quantize: str, settings: EngineSettings
    ) -> LoadOutcome:
        self._drop()
        self.fixer = Fixer(None, "the model could not be loaded")  # until it is: deterministic repairs only
        self._settings = settings
        try:
            self._start_torch()
            from diffusion_infill.engine.factory import load_any
            from diffusion_infill.engine.repair.diffusion import DiffusionRepairer

            self._loaded = load_any(model, device, dtype, trust_remote_code=self._trust_remote_code, quantize=quantize)
            self.engine = self._created(settings)
            problem = self._loaded.canvas_problem
            self.fixer = Fixer(None, problem) if problem else Fixer(DiffusionRepairer(self._loaded), model_fixes=False)
        except ModelLoadError as error:
            self._end(load, State.FAILED)
            return LoadOutcome(model or "the embedded model", str(error))
        except Exception as error:  # e.g. a CUDA device on a machine without one: torch raises many kinds
            log.exception("loading %s on %s failed", model or "the embedded model", device)
            self._end(load, State.FAILED)
            return LoadOutcome(model or "the embedded model", f"{type(error).__name__}: {error} (device {device})")
        self._end(load, State.READY)
        return LoadOutcome(self._loaded.source)

    def _start_torch(self) -> None:
        """Seeds torch and limits its threads, before the first model loads; later loads leave them."""
        if self._torch_start is not None:
            from diffusion_infill.engine.devices import start_torch

            start_torch(self._torch_start.seed, self._torch_start.threads)
            self._torch_start = None

    def configure(self, settings: EngineSettings) -> None:
        self._settings = settings
        if self._remote:
            self.engine.settings = settings
        elif self._loaded is not None:
            self.engine = self._created(settings)

    def renew(self) -> None:
        """A fresh engine on the same weights, after a completion failed: the engine keeps state between calls
        (the prefix KV cache) that the failure may have left broken."""
        if self._loaded is not None:
            self.engine = self._created(self._settings)

    def _created(self, settings: EngineSettings):
        """A fresh engine on the loaded model."""
        from diffusion_infill.engine.factory import create_engine

        return create_engine(self._loaded, settings)


def release_gpu_cache() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def calibration_beside(model: str | None) -> Calibration | None:
    """A local checkpoint's calibration, read before its weights; None for a hub id (its folder is
    known only once loaded, and then its engine has none) or a path that cannot be expanded (the
    load reports it)."""
    try:
        return Calibration.load(local_directory(model))
    except RuntimeError:
        return None
