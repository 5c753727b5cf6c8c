"""The model's lifecycle as the editor sees it, on the event loop: a load (or a server's connection)
started by `initialize` or a settings change, what it makes stale (the kept runs and fixes) and the request
policy adopted at its start and end, its `window/workDoneProgress` and outcome, the state
published at each change (lsp.status: `infill/status` and the same `window/logMessage` line), and a
remote engine's server that stopped answering, told once until it answers again. The load itself runs
on the engine thread (lsp.completion.worker)."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Future
from typing import Any, Protocol

from lsprotocol import types

from diffusion_infill.engine.remote.settings import Credentials
from diffusion_infill.lsp.completion.current_engine import LoadOutcome
from diffusion_infill.lsp.completion.runs import Runs
from diffusion_infill.lsp.completion.worker import EngineWorker
from diffusion_infill.lsp.settings import ServerSettings
from diffusion_infill.lsp.status import ERROR, LOADING, READY, STATUS_NOTIFICATION, status

log = logging.getLogger(__name__)


class Kept(Protocol):
    """Results kept for the model that computed them: another model makes them stale."""

    def clear(self) -> None: ...


class Server(Protocol):
    """What of the server (lsp.server.InfillServer) the lifecycle reads and writes through."""

    settings: ServerSettings
    credentials: Credentials
    worker: EngineWorker
    runs: Runs
    fixes: Kept  # lsp.fixes.results.FixResults: the code actions' results
    client_capabilities: types.ClientCapabilities
    work_done_progress: Any  # pygls' progress reporter
    protocol: Any  # pygls' protocol: notify

    def tell(self, kind: types.MessageType, message: str) -> None: ...

    def background(self, coroutine) -> None: ...

    def window_log_message(self, params: types.LogMessageParams) -> None: ...


class ModelLifecycle:
    def __init__(self, ls: Server):
        self.ls = ls
        self.loading: Future[LoadOutcome] | None = None
        self.unreachable = False  # the remote engine's server failed and the user was told; until it answers

    def publish_status(self, state: str, message: str = "") -> None:
        """infill/status, and the same line as window/logMessage (lsp.status)."""
        current = status(self.ls.settings, state, message)
        self.ls.window_log_message(current.log_message())  # first: a client that sees the status has the line
        self.ls.protocol.notify(STATUS_NOTIFICATION, current.params())

    def server_failed(self, message: str) -> None:
        """The remote engine's server failed: told once, not at every keystroke, until it answers again."""
        if not self.unreachable:
            self.unreachable = True
            self.ls.tell(types.MessageType.Error, f"{message}; inline completion is off until the server answers")
            self.publish_status(ERROR, message)

    def server_answered(self) -> None:
        """The remote engine's server answered a completion: if it had failed, it is back."""
        if self.unreachable:
            self.unreachable = False
            self.publish_status(READY, "the server answers again")

    def load(self) -> None:
        """Starts loading the model the settings name, or connecting to their server, on the engine thread.
        Another model: the kept runs and fixes were its predecessor's."""
        self.ls.runs.clear()
        self.ls.fixes.clear()
        settings, remote = self.ls.settings, self.ls.settings.remote_settings()
        self.unreachable = False
        if remote is not None:
            remote = self.ls.credentials.attach(remote)
            # a setting may have chosen where code goes: whoever reads the log can see where
            log.warning(
                "engine openai: the text around the cursor is sent to %s (%s the API key)",
                remote.url or "(no url)",
                "with" if remote.api_key else "without",
            )
            self.loading = self.ls.worker.connect(remote, settings.engine_settings())
        else:
            self.loading = self.ls.worker.load(
                settings.model, settings.device, settings.dtype, settings.engine_settings(), settings.quantize
            )
        self.ls.runs.adopt(settings)  # the calibration beside a local checkpoint's weights already gates
        loading, loop = self.loading, asyncio.get_running_loop()
        # the load's end is handled on the loop before the completions queued behind it
        loading.add_done_callback(lambda _: _on_loop(loop, self._loaded, loading))

    def _loaded(self, loading: Future) -> None:
        if self.loading is loading:  # else superseded: the load that replaced it adopts its own policy
            self.ls.runs.adopt(self.ls.settings)

    def switch(self, previous: ServerSettings) -> None:
        """The settings changed from `previous`: the model loads again only when model, device, dtype or
        quantization changed; else other engine settings or another request policy make the kept runs stale."""
        ls, settings = self.ls, self.ls.settings
        if settings.model_key() != previous.model_key():
            self.load()
            ls.background(self.report())
            return
        policy = ls.runs.policy
        ls.runs.adopt(settings)
        if settings.engine_settings() != previous.engine_settings():
            ls.runs.clear()
            ls.worker.configure(settings.engine_settings())
        elif ls.runs.policy != policy:  # every run and result was asked under the other policy
            ls.runs.clear()

    async def report(self) -> None:
        """window/workDoneProgress while the model loads, infill/status before and after; window/showMessage
        if it cannot."""
        ls = self.ls
        loading, name = self.loading, ls.settings.model or "the embedded model"
        if loading is None:
            return
        self.publish_status(LOADING)
        token = f"diffusion-infill/load/{id(loading)}"
        progress = bool(ls.client_capabilities.window and ls.client_capabilities.window.work_done_progress)
        if progress:
            try:
                await ls.work_done_progress.create_async(token)
            except Exception as error:  # the client refused the token: load without a progress bar
                log.warning("no progress bar: %s", error)
                progress = False
        if progress:
            begin = types.WorkDoneProgressBegin(title="diffusion-infill", message=f"loading {name}")
            ls.work_done_progress.begin(token, begin)
        outcome = await asyncio.wrap_future(loading)
        if progress:
            done = "ready" if outcome.error is None else "failed"
            ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=f"{name}: {done}"))
        if self.loading is not loading:  # settings asked for another model meanwhile: its load says how it ends
            log.info("superseded load of %s ended%s", name, f": {outcome.error}" if outcome.error else "")
        elif outcome.error is not None:
            ls.tell(types.MessageType.Error, f"could not load the model, inline completion is off: {outcome.error}")
            self.publish_status(ERROR, outcome.error)
        elif outcome.unreachable is not None:
            self.server_failed(outcome.unreachable)
        else:
            log.info("model ready: %s", outcome.source)
            self.publish_status(READY, f"from {outcome.source}")
            if ls.settings.remote_settings() is None and ls.worker.calibration is None:
                ls.tell(
                    types.MessageType.Info,
                    f"{outcome.source} is not calibrated (no confidence.json): every "
                    "completion is shown while typing; `python -m diffusion_infill.bench.calibrate --write` fits one",
                )


def _on_loop(loop: asyncio.AbstractEventLoop, callback, *args) -> None:
    """`callback(*args)` on the event loop, from another thread; nothing once the loop has closed (a load
    that ends after the session did: its outcome concerns no one, and a traceback would say otherwise)."""
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:  # "Event loop is closed"
        log.debug("the event loop closed before %s could run", getattr(callback, "__name__", callback))
