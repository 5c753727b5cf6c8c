"""diffusion_infill.lsp.diagnostics.process on its own: a real worker process runs this module's functions
(sent by name: the worker imports this module)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from processes import appears, running

from diffusion_infill.lsp.diagnostics.process import DiagnosisProcess, WorkerDied, WorkerTimedOut

PATIENCE = 60  # seconds a computation waits for its stop before giving up (far longer than any test needs)


def until_stopped(cancelled: Callable[[], bool]) -> str:
    deadline = time.monotonic() + PATIENCE
    while not cancelled():
        if time.monotonic() > deadline:
            return "never stopped"
        time.sleep(0.001)
    return "stopped"


def stopped_already(cancelled: Callable[[], bool]) -> bool:
    return cancelled()


def own_pid(cancelled: Callable[[], bool]) -> int:
    return os.getpid()


def surroundings(cancelled: Callable[[], bool]) -> tuple[int, bool]:
    """The worker's niceness, and whether its stdout is the same file as its stderr."""
    out, err = os.fstat(1), os.fstat(2)
    return os.nice(0), (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino)


@pytest.fixture
def process():
    process = DiagnosisProcess()
    yield process
    process.shutdown()


async def test_a_stop_reaches_the_running_computation_and_never_the_next(process):
    first = asyncio.ensure_future(process.run("first", until_stopped))
    while not process.stop("first"):  # False until its computation has been sent to the worker
        await asyncio.sleep(0.01)
    assert await first == "stopped"
    assert await process.run("second", stopped_already) is False
    assert process.stop("second") is False, "a computation that returned is never stopped"


async def test_a_computation_waits_for_the_one_running_and_a_stop_names_its_own(process):
    first = asyncio.ensure_future(process.run("first", until_stopped))
    second = asyncio.ensure_future(process.run("second", stopped_already))
    while not process.stop("first"):
        assert not process.stop("second"), "the second computation runs only after the first"
        await asyncio.sleep(0.01)
    assert await first == "stopped" and await second is False


async def test_the_worker_is_niced_and_its_stdout_is_stderr(process):
    niceness, stdout_is_stderr = await process.run("look", surroundings)
    assert niceness == min(os.nice(0) + 10, 19)
    assert stdout_is_stderr, "the worker could write into the language server's protocol stream"


async def test_a_killed_worker_is_logged_once_and_the_next_computation_starts_another(process, caplog):
    killed = await process.run("pid", own_pid)
    running = asyncio.ensure_future(process.run("killed", until_stopped))
    await asyncio.sleep(0)  # its first step sends it to the worker
    os.kill(killed, signal.SIGKILL)
    with pytest.raises(WorkerDied):
        await running
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "ended while computing" in errors[0].getMessage()
    assert await process.run("next", stopped_already) is False
    assert await process.run("pid", own_pid) != killed


@pytest.mark.parametrize("name", ["repairs", "diagnostics"])
async def test_a_computation_past_the_deadline_is_logged_naming_the_bound_and_the_next_gets_a_new_worker(name, caplog):
    """Issue 52 item 3: a worker that stops answering (a repair's resolve, a diagnosis) is killed, and the
    server's log says which process, the bound, and that the next computation starts another."""
    process = DiagnosisProcess(name, deadline=1)
    try:
        overran = await process.run("warm", own_pid)  # a fresh worker's start-up has a bound of its own (STARTUP_S)
        with pytest.raises(WorkerTimedOut, match=f"the {name} process gave no result within 1 s"):
            await process.run("overruns", until_stopped)
        assert [(r.levelno, r.getMessage()) for r in caplog.records if r.levelno >= logging.WARNING] == [
            (
                logging.WARNING,
                f"the {name} process gave no result within 1 s: killed; the next computation starts a new one",
            )
        ]
        assert await appears(lambda: not running(overran), 10), "the worker that overran still runs"
        assert await process.run("next", own_pid) != overran
    finally:
        process.shutdown()


# Python exits (asyncio.run returns) while a computation is under way, with nothing shut down.
EXITS_MIDWAY = """
import asyncio, logging, multiprocessing, threading
from diffusion_infill.bench.big import broken_json_line
from diffusion_infill.lsp.diagnostics.publisher import Payload, _diagnose_payload
from diffusion_infill.lsp.diagnostics.process import DiagnosisProcess, log

class Sent(logging.Handler):
    def emit(self, record):
        if "sent to the diagnostics process" in record.getMessage():
            sent.set()

async def main():
    payload = Payload("file:///x.json", "json", 1, broken_json_line(14_000_000, damage_every=1), "utf-16")
    asyncio.ensure_future(DiagnosisProcess().run("owner", _diagnose_payload, payload))
    assert await asyncio.to_thread(sent.wait, 60)
    print(*[child.pid for child in multiprocessing.active_children()])

sent = threading.Event()
logging.basicConfig()  # warnings and errors on stderr, as `serve` logs them
logging.root.handlers[0].setLevel(logging.WARNING)
log.setLevel(logging.DEBUG)
log.addHandler(Sent())
asyncio.run(main())
"""


def test_python_exits_during_a_computation_at_once_silently_and_without_the_worker():
    run = subprocess.run([sys.executable, "-c", EXITS_MIDWAY], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    [worker] = map(int, run.stdout.split())
    assert not running(worker)
