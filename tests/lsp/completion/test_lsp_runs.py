"""lsp.completion.runs: a run superseded before its engine job failed leaves no asyncio error report; a run asked
while typing waits the debounce (a key meanwhile starts none), one the user asked for starts at once; a
publish callback that raises is logged and the run still answers; a finished result answers only the key it was
computed for."""

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
from diffusion_infill.lsp.completion.triggers import Trigger
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


class AnsweringWorker:
    """The engine thread's side of a run, answering each job at once with a text of its own."""

    def __init__(self):
        self.jobs: list[Job] = []

    def complete(self, job: Job) -> Future[list[Draft]]:
        self.jobs.append(job)
        answered: Future[list[Draft]] = Future()
        answered.set_result([Draft(f"answer {len(self.jobs)}", 3, 0.0, final=True, valid=True)])
        return answered


async def test_a_second_cursor_on_the_same_version_starts_a_new_run():
    """The finished result is kept for the very key it answered, not for any request of the document."""
    worker = AnsweringWorker()
    runs = Runs(worker, lambda *_: None)  # type: ignore[arg-type]: only `complete` is called
    first = await runs.complete(RunKey("file:///a.py", 1, 4, None, 1), InfillRequest("x = ", "1\n"), Position(0, 4))
    again = await runs.complete(RunKey("file:///a.py", 1, 4, None, 1), InfillRequest("x = ", "1\n"), Position(0, 4))
    other = await runs.complete(RunKey("file:///a.py", 1, 1, None, 1), InfillRequest("x", " = 1\n"), Position(0, 1))
    assert [draft.text for draft in (*first, *again, *other)] == ["answer 1", "answer 1", "answer 2"]
    assert [job.request.prefix for job in worker.jobs] == ["x = ", "x"]


class HeldWorker:
    """The engine thread's side of a run that is still denoising: its job never ends on its own."""

    def __init__(self):
        self.jobs: list[Job] = []

    def complete(self, job: Job) -> Future[list[Draft]]:
        self.jobs.append(job)
        return Future()


async def test_a_draft_handed_over_after_the_run_was_stopped_is_not_published():
    """The engine finishes the step it is in before it looks at the cancel: that step's draft reaches the event
    loop after the edit and must not repaint the editor (the end-to-end test of this, test_lsp_late_drafts.py,
    catches it only when the timing puts a step there)."""
    worker, published = HeldWorker(), []
    runs = Runs(worker, lambda key, at, draft, *_: published.append(draft.text))  # type: ignore[arg-type]
    key = RunKey("file:///a.py", 1, 4, None, 1, Trigger.AUTOMATIC)
    answer = asyncio.ensure_future(runs.complete(key, InfillRequest("x = ", "\n"), Position(0, 4)))
    while not worker.jobs:
        await asyncio.sleep(0)
    [job] = worker.jobs
    job.on_draft(Draft("1 +", 1, 0.0, final=False))
    await asyncio.sleep(0)  # the loop runs the callback the engine thread scheduled
    runs.invalidate(key.uri)  # an edit
    assert await answer == []
    job.on_draft(Draft("1 + 2", 2, 0.0, final=False))  # the step in flight when the edit came
    await asyncio.sleep(0)
    assert published == ["1 +"]


async def _asked(trigger: Trigger) -> tuple[AnsweringWorker, Runs, RunKey, asyncio.Future]:
    """A request at `x = |` of version 1, one turn of the loop after it came."""
    engine = AnsweringWorker()
    runs = Runs(engine, lambda *_: None)  # type: ignore[arg-type]
    key = RunKey("file:///a.py", 1, 4, None, 1, trigger)
    asked = asyncio.ensure_future(runs.complete(key, InfillRequest("x = ", "\n"), Position(0, 4)))
    await asyncio.sleep(0)
    return engine, runs, key, asked


async def test_a_run_asked_while_typing_waits_the_debounce_and_a_key_meanwhile_starts_none():
    engine, runs, key, asked = await _asked(Trigger.AUTOMATIC)
    assert engine.jobs == []  # the debounce: no job yet
    runs.invalidate(key.uri)  # the next key's didChange
    assert await asked == []
    await asyncio.sleep(runs.policy.debounce_s * 2)
    assert engine.jobs == []  # never started: no model step for a key typed past
    later = RunKey("file:///a.py", 2, 5, None, 1, Trigger.AUTOMATIC)
    await runs.complete(later, InfillRequest("x = 1", "\n"), Position(0, 5))
    assert len(engine.jobs) == 1  # one quiet moment: one run


async def test_a_run_the_user_asked_for_starts_at_once():
    engine, _, _, asked = await _asked(Trigger.INVOKED)
    assert len(engine.jobs) == 1
    await asked
