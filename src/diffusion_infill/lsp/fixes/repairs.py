"""The code actions' Fix JSON and Fix Markdown, computed in a worker process of their own
(lsp.diagnostics.process), neither on the engine thread nor on the event loop: a fix of a 10 MB
selection takes seconds, and no completion may wait for it, nor any keystroke.

In the server those fixes are the deterministic repairs alone (engine.repair.fixes leaves the model's
candidates out there), so the worker needs no model. One repair runs at a time. The repairs have no
check to stop at, so a repair that is no longer wanted is killed with its worker (the next one starts
another): one for a document that changed or closed since (`stop`), one for a document a newer repair
is asked for (superseded), one whose request the client cancelled, and one that outlives the server's
worker deadline (`serve --worker-timeout`: a stopped or runaway worker). Its caller gets `Stopped`, whose
message says why (the bound, for the last).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from diffusion_infill.engine.repair.fixes import Fixer, FixResult, Surroundings
from diffusion_infill.lsp.diagnostics.process import DiagnosisProcess, WorkerDied, WorkerTimedOut
from diffusion_infill.lsp.text.rope import Rope

# The server's Fixer for Fix JSON and Fix Markdown: the deterministic repairs alone (lsp.completion.worker loads the
# same with model_fixes=False); built once in the worker.
_FIXER = Fixer(None, model_fixes=False)


class Stopped(Exception):
    """The repair was stopped before it ended; the message says why."""


@dataclass(frozen=True)
class Asked:
    """One repair, as plain data for the worker: the selection travels as the text's pieces and is sliced there,
    not on the event loop."""

    run: Callable[[Fixer, str, Surroundings], FixResult]  # e.g. Fixer.fix_json: pickled by its name
    pieces: tuple[str, ...]  # the document's text (lsp.text.rope)
    start: int  # the selection, as offsets into it
    end: int
    around: Surroundings


def _repair(asked: Asked, cancelled: Callable[[], bool]) -> FixResult:
    """In the worker: the repair of the selection."""
    selected = Rope(pieces=asked.pieces)[asked.start : asked.end]
    return asked.run(_FIXER, selected, asked.around)


@dataclass
class _Request:
    uri: str
    why: str | None = None  # set once stopped: why


class Repairs:
    """Repairs in their worker process: one at a time, the latest of each document, stoppable."""

    def __init__(self, deadline: float | None = None) -> None:
        self._process = DiagnosisProcess("repairs", deadline)  # deadline: seconds a repair may take
        self._turn = asyncio.Lock()
        self._latest: dict[str, _Request] = {}  # per URI: its repair running or waiting

    async def run(self, uri: str, asked: Asked) -> FixResult:
        """The repair's result; Stopped when a change of the document, a newer repair of it or the
        shutdown stopped it, or the worker died."""
        request = _Request(uri)
        older = self._latest.get(uri)
        if older is not None:
            self._stop(older, "a newer fix of the document was asked for")
        self._latest[uri] = request
        try:
            async with self._turn:
                if request.why is not None:
                    raise Stopped(request.why)
                try:
                    return await self._process.run(request, _repair, asked)
                except WorkerTimedOut as overran:
                    raise Stopped(str(overran)) from None
                except WorkerDied:
                    raise Stopped(request.why or "the repairs process ended while repairing") from None
        finally:
            if self._latest.get(uri) is request:
                del self._latest[uri]

    def stop(self, uri: str, why: str) -> None:
        """The document changed or closed: its repair, running or waiting, is stopped."""
        request = self._latest.pop(uri, None)
        if request is not None:
            self._stop(request, why)

    def shutdown(self) -> None:
        for uri in list(self._latest):
            self.stop(uri, "the server is shutting down")
        self._process.shutdown()

    def _stop(self, request: _Request, why: str) -> None:
        request.why = why
        self._process.kill(request)  # when running; one waiting ends at its turn
