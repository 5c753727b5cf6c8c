"""The server's state as an editor shows it (a status bar item, a statusline component).

Standard LSP carries what it can: the load is `window/workDoneProgress` (lsp.model_lifecycle) and every
change of state is also a `window/logMessage` line. No standard message says "the model is
ready" or "failed" so that it stays on screen, hence one custom notification, `infill/status`,
sent at each change: {state, engine, model, message}. A client shows "starting" until the
first one arrives.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from lsprotocol import types

from diffusion_infill.lsp.settings import ServerSettings

STATUS_NOTIFICATION = "infill/status"
LOADING, READY, ERROR = "loading", "ready", "error"
EMBEDDED = "the embedded model"
_LEVELS = {LOADING: types.MessageType.Info, READY: types.MessageType.Info, ERROR: types.MessageType.Error}


@dataclass(frozen=True)
class Status:
    state: str  # LOADING, READY or ERROR
    engine: str  # the `engine` setting: "local" or "openai"
    model: str  # the model asked for: a checkpoint path, a hub id, a served model's name, or EMBEDDED
    message: str = ""  # what the state means in a line: what loads, where it was found, why it failed

    def params(self) -> dict[str, str]:
        return asdict(self)

    def log_message(self) -> types.LogMessageParams:
        """The same change as a window/logMessage line."""
        line = f"{self.state}: {self.model} (engine {self.engine})" + (f"; {self.message}" if self.message else "")
        return types.LogMessageParams(type=_LEVELS[self.state], message=line)


def status(settings: ServerSettings, state: str, message: str = "") -> Status:
    """The state of the model that `settings` name."""
    remote = settings.remote_settings()
    if remote is None:
        return Status(state, settings.engine, settings.model or EMBEDDED, message)
    return Status(state, settings.engine, remote.model or "(no model)", message)
