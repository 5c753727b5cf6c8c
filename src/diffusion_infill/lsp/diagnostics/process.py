"""A worker process apart from the server's: the one that computes diagnostics
(diffusion_infill.lsp.diagnostics.publisher) is one, the one that computes the code actions' repairs
(diffusion_infill.lsp.fixes.repairs) another.

Their work (json.loads, encoding the text, tree-sitter parsing, the Markdown rules) holds the GIL
for tens to hundreds of milliseconds at a time on a large document: on a thread of the server, the
event loop waited that long to answer a keystroke in any other file. In a process of its own it
never competes with the loop. The process starts the first time a computation is asked for (a
session that never opens a JSON or Markdown document never starts it), with "spawn", never "fork":
the server has threads and may have torch loaded.

One computation runs at a time, the next waits its turn on the event loop; so a stop, written
into a value the two processes share, only ever concerns the one running: the worker's
`cancelled()` is true once that value holds the running computation's serial number.

Computations and results travel over two pipes, carried on the server's side by a thread of
their own (the event loop never pickles or copies a 10 MB text). Not concurrent.futures'
ProcessPoolExecutor: its queues hold named semaphores, which the server's `exit` (os._exit)
leaves behind, and multiprocessing's resource tracker then warns about them on stderr, which
editors show as errors.

The worker is a guest: it lowers its priority (the server and the editor come first on a small
machine), points its stdout at stderr (it inherits the server's stdout, which is the protocol),
and ends itself as soon as the server is gone, even mid-computation (the server's `exit` calls
os._exit, which waits for no one). A worker that dies while computing is logged, that computation
raises WorkerDied, and the next one starts a new worker. A computation that has no check to stop at
(the repairs have none) is killed with its worker (`kill`), and so is one whose caller was cancelled:
no one is left to read its result.

A computation may be given a deadline (`serve --worker-timeout`): the worker acknowledges each computation
once it has it (the function's module imported), and the bound counts from there, so a worker's start-up
(seconds: spawn, imports, tree-sitter's grammars) never counts. A warm worker must also acknowledge within
the bound; a fresh one within STARTUP_S. A worker that overruns (stopped, looping, swapping) is killed, the
computation raises WorkerTimedOut, and the next one starts a new worker.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import itertools
import logging
import multiprocessing
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, TypeVar

T = TypeVar("T")
# Seconds a fresh worker has to acknowledge its first computation: spawn and the imports take a few on a
# loaded 2-core machine; this bounds only a worker that never starts.
STARTUP_S = 120.0
# The default deadline (`serve --worker-timeout`): a repair of a 10 MB selection or the diagnostics of a 16 MB
# JSON document take seconds (docs/reliability.md); a worker that has given nothing in a minute is stopped or looping.
WORKER_TIMEOUT_S = 60.0
log = logging.getLogger(__name__)
# Set before multiprocessing's own exit handler (registered earlier, run later) ends the worker.
_python_exits = threading.Event()
atexit.register(_python_exits.set)


class WorkerDied(Exception):
    """The worker process ended while computing (killed, out of memory)."""


class WorkerTimedOut(WorkerDied):
    """The worker gave no result within the deadline; it was killed. The message names the bound."""


def _serve(requests: Connection, results: Connection, stop: Any) -> None:
    """The worker: computations in, results out, until the server closes its end or is gone."""
    os.dup2(2, 1)  # print() or a C library's output must never land in the protocol stream
    try:
        os.nice(10)
    except (AttributeError, OSError):  # no nice() on Windows; a sandbox may refuse it
        pass
    threading.Thread(target=_exit_with_parent, name="exit-with-server", daemon=True).start()
    while True:
        try:
            serial, function, args = requests.recv()
        except (EOFError, OSError):  # the server closed its end, or was gone before it finished sending
            return
        try:
            results.send(_STARTED)  # the deadline counts from here (module docstring)
        except OSError:
            return
        outcome = _outcome(function, args, functools.partial(_stopped, stop, serial))
        try:
            results.send(outcome)
        except OSError:  # the server is gone
            return
        except Exception as error:  # pickle could not send it
            results.send((False, RuntimeError(f"{outcome[1]!r} could not be sent back: {error!r}")))


_STARTED = None  # the acknowledgement, on the results pipe before each outcome


@dataclass(frozen=True)
class _Computation:
    started: Future  # its result (None) once the worker has acknowledged it
    done: Future
    warm: bool  # its worker had acknowledged one before


def _stopped(stop: Any, serial: int) -> bool:
    return stop.value == serial


def _outcome(function: Callable[..., T], args: tuple, cancelled: Callable[[], bool]) -> tuple[bool, Any]:
    try:
        return True, function(*args, cancelled)
    except Exception as error:  # the server raises it where it awaits the result
        return False, error


def _exit_with_parent() -> None:
    parent = multiprocessing.parent_process()
    if parent is not None:
        wait([parent.sentinel])
        os._exit(0)  # whatever the computation is doing: no one is left to read its result


class _Worker:
    """One worker process and the thread that carries computations to it and their results back."""

    def __init__(self, context: Any, name: str) -> None:
        self.name = name
        self.stop = context.Value("q", 0, lock=False)  # one writer (the event loop), one reader
        worker_requests, self._requests = context.Pipe(duplex=False)
        self._results, worker_results = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_serve, args=(worker_requests, worker_results, self.stop), name=name, daemon=True
        )  # daemon: ended when Python exits
        self._process.start()
        worker_requests.close()  # its ends, so that its death reads here as an end of file
        worker_results.close()
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()  # `alive`, and what is queued once it is False
        self.alive = True
        self.killed = False  # by `kill`: its end is no error
        self.warm = False  # has acknowledged a computation (set by the courier)
        # A daemon: waiting for a result never keeps Python from exiting.
        threading.Thread(target=self._carry, name="diagnostics-courier", daemon=True).start()

    def submit(self, serial: int, function: Callable[..., T], args: tuple) -> _Computation | None:
        """The futures of `function(*args, cancelled)`; None once the worker has died."""
        computation = _Computation(Future(), Future(), self.warm)  # warm: the one before was acknowledged
        for future in (computation.started, computation.done):
            future.set_running_or_notify_cancel()  # a computation under way cannot be cancelled, only stopped
        with self._lock:
            if not self.alive:
                return None
            self._queue.put((computation, (serial, function, args)))
        return computation

    def close(self) -> None:
        """The worker ends once its computation does (stopped or not); nothing waits for it."""
        self._queue.put(None)

    def kill(self) -> None:
        """Ends the worker now, mid-computation: its computation raises WorkerDied."""
        self.killed = True
        self._process.kill()

    def died_idle(self) -> bool:
        """Whether the process ended between two computations (killed, out of memory): the courier
        would only find out by sending it the next one, which would then be lost."""
        if not self.alive or self._process.is_alive():
            return False
        log.warning("the %s process ended (exit code %s); starting a new one", self.name, self._process.exitcode)
        return True

    def _carry(self) -> None:
        while (item := self._queue.get()) is not None:
            computation, request = item
            try:
                self._requests.send(request)
                log.debug("computation %d sent to the %s process %d", request[0], self.name, self._process.pid)
                self._results.recv()  # _STARTED
                self.warm = True
                computation.started.set_result(None)
                succeeded, value = self._results.recv()
            except (EOFError, OSError) as error:
                self._died(computation, error)
                return
            except Exception as error:  # pickle could not send the computation or read its result
                _fail(computation, error)
                continue
            (computation.done.set_result if succeeded else computation.done.set_exception)(value)
        self._requests.close()  # the worker reads an end of file and ends
        self._results.close()

    def _died(self, computation: _Computation, error: BaseException) -> None:
        self._process.join(1)  # it is gone (its pipe closed): reaped here, and its exit code read
        expected = _python_exits.is_set() or self.killed  # ended by Python's exit or by `kill`
        log.log(
            logging.DEBUG if expected else logging.ERROR,
            "the %s process ended while computing (exit code %s, %r); the next computation starts a new one",
            self.name,
            self._process.exitcode,
            error,
        )
        with self._lock:
            self.alive = False
            queued = [(computation, None)]
            while not self._queue.empty():
                queued.append(self._queue.get())
        for item in queued:
            if item is not None:  # None: close() asked the courier to end
                _fail(item[0], WorkerDied())
        self._requests.close()
        self._results.close()


def _fail(computation: _Computation, error: BaseException) -> None:
    for future in (computation.started, computation.done):
        if not future.done():
            future.set_exception(error)


@dataclass(frozen=True)
class _Running:
    owner: object  # who asked for it: a stop names it
    serial: int
    future: Future  # its result
    worker: _Worker  # the one it runs in


class DiagnosisProcess:
    """One worker process, one computation at a time, each stoppable from the event loop."""

    def __init__(self, name: str = "diagnostics", deadline: float | None = None) -> None:
        self._name = name  # the process's, in log lines
        self._deadline = deadline  # seconds a computation may take once acknowledged; None: no bound
        self._context = multiprocessing.get_context("spawn")
        self._worker: _Worker | None = None
        self._serials = itertools.count(1)
        self._turn = asyncio.Lock()
        self._running: _Running | None = None

    async def run(self, owner: object, function: Callable[..., T], *args: Any) -> T:
        """`function(*args, cancelled)` in the worker, once the computation before it has ended: its
        result, or its exception (jsonfix.Cancelled once `stop(owner)` stopped it). `function` must be
        importable by name (pickle sends the reference); so must `args`' types. WorkerDied when the
        worker dies meanwhile (or is killed), WorkerTimedOut when it overran the deadline (and was killed).
        A caller cancelled while its computation runs kills the worker: no one would read the result."""
        async with self._turn:
            serial = next(self._serials)
            worker, computation = self._submit(serial, function, args)
            self._running = _Running(owner, serial, computation.done, worker)
            try:
                return await self._result(owner, computation)
            except asyncio.CancelledError:
                self.kill(owner)
                raise
            finally:
                self._running = None

    async def _result(self, owner: object, computation: _Computation) -> Any:
        if self._deadline is None:
            return await asyncio.wrap_future(computation.done)
        loop = asyncio.get_running_loop()
        since = loop.time()
        await self._within(owner, computation.started, self._deadline if computation.warm else STARTUP_S)
        if not computation.warm:
            since = loop.time()  # a fresh worker's start-up is not the computation's
        return await self._within(owner, computation.done, since + self._deadline - loop.time())

    async def _within(self, owner: object, future: Future, seconds: float) -> Any:
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), max(seconds, 0.0))
        except TimeoutError:
            if future.done():  # it came as the bound ran out: the worker answered
                return future.result()
            bound = f"the {self._name} process gave no result within {self._deadline:g} s"
            log.warning("%s: killed; the next computation starts a new one", bound)
            self.kill(owner)
            raise WorkerTimedOut(f"{bound} (--worker-timeout); it was replaced") from None

    def stop(self, owner: object) -> bool:
        """Stops the computation `owner` asked for if it is running (it ends at its next check, raising
        what `function` raises when cancelled); False when `owner` has none running."""
        running = self._running
        if running is None or running.owner is not owner:
            return False
        running.worker.stop.value = running.serial  # its serial: once it has returned, it stops no other
        return True

    def kill(self, owner: object) -> bool:
        """Kills the worker running the computation `owner` asked for, which raises WorkerDied; the next
        computation starts another worker. For computations with no check to stop at. False when `owner`
        has none running."""
        running = self._running
        if running is None or running.owner is not owner or running.future.done():
            return False
        running.worker.kill()
        if self._worker is running.worker:
            self._worker.close()  # its courier ends once it has read the end
            self._worker = None
        return True

    def shutdown(self) -> None:
        """Stops the running computation and lets the worker end, without waiting for it."""
        if self._running is not None:
            self.stop(self._running.owner)
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def _submit(self, serial: int, function: Callable[..., T], args: tuple) -> tuple[_Worker, _Computation]:
        if self._worker is not None and self._worker.died_idle():
            self._worker.close()  # its courier, waiting for work, ends
            self._worker = None
        if self._worker is not None and (computation := self._worker.submit(serial, function, args)) is not None:
            return self._worker, computation
        self._worker = _Worker(self._context, self._name)  # the first computation, or the one after a worker died
        return self._worker, self._worker.submit(serial, function, args)
