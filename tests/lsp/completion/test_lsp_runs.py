"""lsp.completion.runs: a run superseded before its engine job failed leaves no asyncio error report."""

from __future__ import annotations

import asyncio
import gc

from lsprotocol.types import Position

from diffusion_infill.engine.remote.client import RemoteError
from diffusion_infill.engine.requests import InfillRequest
from diffusion_infill.lsp.completion.runs import Run, RunKey, Runs
from diffusion_infill.lsp.completion.sampling import Job
from diffusion_infill.lsp.completion.worker import EngineWorker


async def test_the_error_of_a_run_already_answered_is_retrieved():
    loop = asyncio.get_running_loop()
    reports: list[dict] = []
    loop.set_exception_handler(lambda _, context: reports.append(context))
    worker = EngineWorker()
    runs = Runs(worker, lambda *_: None)
    job = Job(InfillRequest("x = ", "\n"), 1, lambda _: None)
    run = Run(RunKey("file:///a.py", 2, 4, None, 1), Position(0, 4), job, loop.create_future())
    run.result.set_result(None)  # superseded by an edit: answered empty before the job ended
    failed = loop.create_future()  # how the engine thread's job ended: the server failed meanwhile
    failed.set_exception(RemoteError("http://127.0.0.1:1/v1: cannot reach it"))
    runs._finish(run, failed)
    del failed
    gc.collect()  # asyncio reports an exception never retrieved when the future is collected
    assert reports == []
    worker.shutdown()
