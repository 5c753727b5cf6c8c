"""lsp.completion.runs: a run superseded before its engine job failed leaves no asyncio error report; a run asked
while typing waits the debounce (a key meanwhile starts none), one the user asked for starts at once; a
publish callback that raises is logged and the run still answers."""

from __future__ import annotations

import asyncio
import gc
from concurrent.futures import Future

from lsprotocol.types import Position

from diffusion_infill.engine.remote.client import RemoteError
from diffusion_infill.engine.requests import Draft, InfillRequest
from diffusion_infill.engine.settings import EngineSettings
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


async def test_a_publish_callback_that_raises_is_logged_and_the_run_still_answers(tiny_model_dir, caplog):
    loop = asyncio.get_running_loop()
    reports: list[dict] = []
    loop.set_exception_handler(lambda _, context: reports.append(context))
    worker = EngineWorker()
    settings = EngineSettings().with_overrides(max_steps=4)
    assert worker.load(str(tiny_model_dir), "cpu", "float32", settings).result(120).error is None

    def publish(*_) -> None:
        raise RuntimeError("the client's stream is closed")

    runs = Runs(worker, publish)
    try:
        key = RunKey("file:///a.py", 1, 4, None, 1)
        # without the guard the answer never comes: wait_for fails instead of hanging
        finals = await asyncio.wait_for(runs.complete(key, InfillRequest("x = ", "\n"), Position(0, 4)), 60)
    finally:
        worker.shutdown()
    assert len(finals) == 1 and finals[0].final
    assert reports == []  # no draft's callback raised into the event loop either
    assert "the client's stream is closed" in caplog.text


class _Engine:
    """Records the jobs handed to the engine thread; each finishes with one empty final draft."""

    def __init__(self):
        self.jobs: list[Job] = []

    def complete(self, job: Job) -> Future:
        self.jobs.append(job)
        done: Future = Future()
        done.set_result([Draft("", 1, 0.0, final=True, valid=True)])
        return done


async def _asked(automatic: bool) -> tuple[_Engine, Runs, RunKey, asyncio.Future]:
    """A request at `x = |` of version 1, one turn of the loop after it came."""
    engine = _Engine()
    runs = Runs(engine, lambda *_: None)  # type: ignore[arg-type]
    key = RunKey("file:///a.py", 1, 4, None, 1, automatic=automatic)
    asked = asyncio.ensure_future(runs.complete(key, InfillRequest("x = ", "\n"), Position(0, 4)))
    await asyncio.sleep(0)
    return engine, runs, key, asked


async def test_a_run_asked_while_typing_waits_the_debounce_and_a_key_meanwhile_starts_none():
    engine, runs, key, asked = await _asked(automatic=True)
    assert engine.jobs == []  # the debounce: no job yet
    runs.invalidate(key.uri)  # the next key's didChange
    assert await asked == []
    await asyncio.sleep(runs.policy.debounce_s * 2)
    assert engine.jobs == []  # never started: no model step for a key typed past
    later = RunKey("file:///a.py", 2, 5, None, 1, automatic=True)
    await runs.complete(later, InfillRequest("x = 1", "\n"), Position(0, 5))
    assert len(engine.jobs) == 1  # one quiet moment: one run


async def test_a_run_the_user_asked_for_starts_at_once():
    engine, _, _, asked = await _asked(automatic=False)
    assert len(engine.jobs) == 1
    await asked
