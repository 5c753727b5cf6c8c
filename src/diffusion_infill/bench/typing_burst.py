"""What a typing burst costs the real language server, against one request at the end.

An editor asks for an inline completion after every keystroke and does not wait for the
answer. The server answers a request `[]` as soon as an edit or a newer request makes it
stale and stops its run at the engine's next step (diffusion_infill.lsp.completion.runs), so most of the burst's work
should be thrown away early. This measures how much is thrown away.

Method, per held-out case (diffusion_infill.bench.heldout's cases, in order, skipping those with fewer
characters before the cursor than keystrokes):

1. Reset: one request on an unrelated document, so that the engine's prefix KV cache and
   its typed-along warm start hold another file (the burst and the reference both start
   cold; the first reset also waits for the model to load).
2. Burst: open the document with the last `keystrokes` characters before the cursor
   removed, then type them back: every keystroke is an incremental `didChange` of one
   character followed at once by an Automatic `textDocument/inlineCompletion` at the new
   cursor, `interval_ms` apart on a fixed schedule, never waiting for an answer. Then all
   answers are awaited. Typed newlines and indentation are keystrokes too.
3. Reset again, then the reference: the final text on a fresh document, one request.

Measured per phase: the server process's CPU time (utime + stime of all its threads, from
/proc/<pid>/stat, 10 ms ticks), the denoising steps the engine ran, and for the burst the
answers (with items; `[]` after a finished run; `[]` superseded, i.e. with no final
`infill/draft` for its version; errors) and the latency of the last request.
Wasted = burst - reference: the steps and CPU that an editor's request-per-keystroke costs
beyond computing the one completion the user sees. It can be negative: superseded runs
stop early, and the burst's last request may converge sooner (a warmer prefix cache, the
randomness of sampling).

Steps are counted by the server, not inferred from notifications: `infill/draft` is sent
only for the first sample's changed drafts and never for a superseded run's late steps.
diffusion_infill.lsp.completion.worker keeps, on its engine thread, the decoder passes of every completion job it
ran (Draft.step of the last draft each engine call yielded, so a run cancelled midway
counts the steps it did run; a job cancelled before it started counts 0) and logs a
debug line after each job with running totals. The server runs with `-v` and this
module follows its stderr; the per-phase count is the difference of the totals, read
once the engine has logged as many jobs as the phase sent requests (a single engine
thread runs them in order). `-v` also logs every JSON-RPC message: a few milliseconds of
CPU over a burst, against seconds of denoising. The prefix encoding is not a step; the
CPU time includes it.

    python -m diffusion_infill.bench.typing_burst --cases 5

Prints one JSON object on the last line of stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from diffusion_infill.bench.heldout import CASE_SEED
from diffusion_infill.bench.lsp_latency import (
    ENGINE_EVERY_TIME,
    Recorder,
    embedded_model_copy,
    end_position,
    request,
    run_header,
    start_server,
)
from diffusion_infill.engine.training.probes import Probe, held_out_line_cases

KEYSTROKES = 30
INTERVAL_MS = 40
TOTALS = re.compile(r"totals: (\d+) steps in (\d+) completions")  # lsp.completion.worker's debug line after every job
QUIET_S = 2.0  # after the answers, a job still to be logged ends within this (its answer came first)
ANSWERS_S = 600.0  # waiting for a phase's answers
OUTCOMES = ("answered_items", "answered_empty", "superseded", "errors")  # what a burst request gets


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, all its threads, from /proc (Linux)."""
    # The command name (field 2) may hold spaces; utime and stime are fields 14 and 15.
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class EngineLog:
    """Follows the server's stderr for diffusion_infill.lsp.completion.worker's running totals. It also keeps the pipe
    drained: with `-v` the server logs every message, and a full pipe would block it."""

    def __init__(self) -> None:
        self.steps = 0
        self.completions = 0
        self.tail: collections.deque[str] = collections.deque(maxlen=20)  # shown when something fails
        self._changed = asyncio.Event()

    async def follow(self, stream: asyncio.StreamReader) -> None:
        pending = b""
        while chunk := await stream.read(1 << 16):  # not readline(): a logged message can outgrow its limit
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                text = line.decode("utf-8", "replace")
                self.tail.append(text[:300])
                match = TOTALS.search(text)
                if match:
                    self.steps, self.completions = int(match[1]), int(match[2])
                    self._changed.set()

    async def reach(self, completions: int) -> None:
        """Waits until the engine has logged `completions` jobs since the server started, or until it
        has been quiet for QUIET_S: a request answered while its run waited the server's debounce
        (lsp.completion.policy.RequestPolicy.debounce_s) started no job, so fewer may come."""
        while self.completions < completions:
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), QUIET_S)
            except TimeoutError:
                return


@dataclass
class Answer:
    latency_ms: float
    items: int = 0
    error: str | None = None


@dataclass(frozen=True)
class Snapshot:
    cpu_s: float
    steps: int
    completions: int


class Session:
    """One server process and what the bench follows of it."""

    def __init__(self, client: LanguageClient, recorder: Recorder, log: EngineLog, pid: int) -> None:
        self.client, self.recorder, self.log, self.pid = client, recorder, log, pid
        self._documents = 0

    def snapshot(self) -> Snapshot:
        return Snapshot(cpu_seconds(self.pid), self.log.steps, self.log.completions)

    def open(self, name: str, text: str) -> str:
        self._documents += 1
        uri = f"file:///bench/{name}{self._documents}.py"
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
        )
        return uri

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))

    async def ask(self, uri: str, position: types.Position) -> Answer:
        sent = time.perf_counter()
        try:
            answer = await request(self.client, uri, position)
        except Exception as error:  # a JSON-RPC error answer, or the server went away
            return Answer((time.perf_counter() - sent) * 1000, error=f"{type(error).__name__}: {error}")
        items = answer.items if isinstance(answer, types.InlineCompletionList) else answer
        return Answer((time.perf_counter() - sent) * 1000, items=len(items or []))

    async def settle(self, before: Snapshot, answers: list[Answer]) -> tuple[float, int]:
        """CPU seconds and denoising steps since `before`, once every job of `answers` is logged.
        A request answered with an error never reached the engine (bad params)."""
        await self.log.reach(before.completions + sum(answer.error is None for answer in answers))
        after = self.snapshot()
        return after.cpu_s - before.cpu_s, after.steps - before.steps

    def unseen(self, name: str) -> str:
        """A first line no earlier request had: the server's suggestion cache would answer a context
        it has seen without the engine, and these requests are there to make the engine work."""
        return f"# {name} {self._documents + 1}\n"

    async def reset(self, case: Probe) -> None:
        """One completion on another file: the engine's prefix cache and warm start forget the case."""
        before = self.snapshot()
        prefix = self.unseen("reset") + case.prefix
        uri = self.open("reset", prefix + case.suffix)
        answer = await asyncio.wait_for(self.ask(uri, end_position(prefix)), ANSWERS_S)
        await self.settle(before, [answer])
        self.close(uri)

    async def burst(self, case: Probe, keystrokes: int, interval_ms: int) -> dict:
        head, typed = case.prefix[:-keystrokes], case.prefix[-keystrokes:]
        before = self.snapshot()
        uri = self.open("burst", head + case.suffix)
        loop = asyncio.get_running_loop()
        started = loop.time()
        asked: list[tuple[int, asyncio.Task[Answer]]] = []
        for index, char in enumerate(typed):
            # A fixed schedule, as keys are pressed: a slow loop iteration does not delay the rest.
            await asyncio.sleep(max(0.0, started + index * interval_ms / 1000 - loop.time()))
            at, version = end_position(head + typed[:index]), index + 2
            self.client.text_document_did_change(
                types.DidChangeTextDocumentParams(
                    types.VersionedTextDocumentIdentifier(version=version, uri=uri),
                    [types.TextDocumentContentChangePartial(range=types.Range(at, at), text=char)],
                )
            )
            # A task: the request is sent now (at the next loop turn) and its answer is not awaited.
            asked.append((version, asyncio.ensure_future(self.ask(uri, end_position(head + typed[: index + 1])))))
        answers = await asyncio.wait_for(asyncio.gather(*(task for _, task in asked)), ANSWERS_S)
        cpu_s, steps = await self.settle(before, answers)
        self.close(uri)
        # A run that finished publishes a final infill/draft before its answer; a superseded one never does.
        outcomes = collections.Counter(
            "errors"
            if answer.error is not None
            else "answered_items"
            if answer.items
            else "answered_empty"
            if (uri, version) in self.recorder.answered
            else "superseded"
            for (version, _), answer in zip(asked, answers, strict=True)
        )
        return {
            "cpu_s": cpu_s,
            "steps": steps,
            **{outcome: outcomes[outcome] for outcome in OUTCOMES},
            "error_messages": sorted({a.error for a in answers if a.error is not None}),
            "last_latency_ms": answers[-1].latency_ms,
        }

    async def single(self, case: Probe) -> dict:
        before = self.snapshot()
        prefix = self.unseen("single") + case.prefix  # the burst's last context may be in the cache
        uri = self.open("single", prefix + case.suffix)
        answer = await asyncio.wait_for(self.ask(uri, end_position(prefix)), ANSWERS_S)
        cpu_s, steps = await self.settle(before, [answer])
        self.close(uri)
        return {
            "cpu_s": cpu_s,
            "steps": steps,
            "items": answer.items,
            "error": answer.error,
            "latency_ms": answer.latency_ms,
        }


async def measure(
    model: Path, reset_case: Probe, cases: list[Probe], keystrokes: int, interval_ms: int, options: dict
) -> list[dict]:
    client = LanguageClient("typing-burst-bench", "1")
    recorder = Recorder()
    client.feature("infill/draft")(lambda ls, params: recorder.receive(params))
    log = EngineLog()
    with tempfile.TemporaryDirectory() as state:
        # One torch thread, and no OpenMP pool beside it: the numbers are per core, and other work shares the CPUs.
        await start_server(
            client,
            model,
            Path(state) / "acceptance.json",
            options,
            "--threads",
            "1",
            verbose=True,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
        process = client._server  # pygls keeps the process private: its pid for /proc, its stderr for the log
        assert process is not None and process.stderr is not None
        following = asyncio.ensure_future(log.follow(process.stderr))
        session = Session(client, recorder, log, process.pid)
        rows = []
        try:
            for case in cases:
                await session.reset(reset_case)
                burst = await session.burst(case, keystrokes, interval_ms)
                await session.reset(reset_case)
                single = await session.single(case)
                rows.append(
                    {
                        "name": case.name,
                        "burst": burst,
                        "single": single,
                        "wasted_steps": burst["steps"] - single["steps"],
                        "wasted_cpu_s": burst["cpu_s"] - single["cpu_s"],
                    }
                )
        except (asyncio.TimeoutError, RuntimeError):
            print("server stderr, last lines:", *log.tail, sep="\n", file=sys.stderr)
            raise
        finally:
            await client.shutdown_async(None)
            client.exit(None)
            await client.stop()
            await following
    return rows


def summarize(rows: list[dict], keystrokes: int, interval_ms: int, options: dict) -> dict:
    bursts, singles = [r["burst"] for r in rows], [r["single"] for r in rows]

    def mean(values) -> float:
        return statistics.fmean(values)

    return {
        "keystrokes": keystrokes,
        "interval_ms": interval_ms,
        "cases": len(rows),
        "settings": options["diffusionInfill"],
        "burst": {
            "requests": keystrokes * len(rows),
            "cpu_s_mean": round(mean(b["cpu_s"] for b in bursts), 3),
            "steps_mean": mean(b["steps"] for b in bursts),
            **{outcome: sum(b[outcome] for b in bursts) for outcome in OUTCOMES},
            "error_messages": sorted({m for b in bursts for m in b["error_messages"]}),
            "last_latency_ms_p50": round(statistics.median(b["last_latency_ms"] for b in bursts), 1),
        },
        "single": {
            "requests": len(rows),
            "cpu_s_mean": round(mean(s["cpu_s"] for s in singles), 3),
            "steps_mean": mean(s["steps"] for s in singles),
            "answered_items": sum(s["items"] > 0 for s in singles),
            "errors": sum(s["error"] is not None for s in singles),
            "latency_ms_p50": round(statistics.median(s["latency_ms"] for s in singles), 1),
        },
        "wasted_steps_mean": mean(r["wasted_steps"] for r in rows),
        "wasted_cpu_s_mean": round(mean(r["wasted_cpu_s"] for r in rows), 3),
        "cpu_ratio": round(mean(b["cpu_s"] for b in bursts) / max(mean(s["cpu_s"] for s in singles), 1e-9), 2),
        "steps_ratio": round(mean(b["steps"] for b in bursts) / max(mean(s["steps"] for s in singles), 1e-9), 2),
        "per_case": [
            {
                "name": r["name"],
                "burst_steps": r["burst"]["steps"],
                "single_steps": r["single"]["steps"],
                "burst_cpu_s": round(r["burst"]["cpu_s"], 2),
                "single_cpu_s": round(r["single"]["cpu_s"], 2),
            }
            for r in rows
        ],
    }


def select_cases(count: int, keystrokes: int) -> tuple[Probe, list[Probe]]:
    """A case to reset with, and `count` cases with at least `keystrokes` characters before the
    cursor to type back, none of them a carriage return (the test documents end lines with \\n)."""
    pool = held_out_line_cases(2 * count + 3, seed=CASE_SEED)  # the same first cases as bench.heldout's
    fit = [case for case in pool if len(case.prefix) >= keystrokes and "\r" not in case.prefix[-keystrokes:]]
    if len(fit) < count + 1:
        raise ValueError(f"only {len(fit) - 1} held-out cases have {keystrokes} characters before the cursor")
    return fit[0], fit[1 : count + 1]


def run(
    cases: int,
    model: Path | None,
    keystrokes: int = KEYSTROKES,
    interval_ms: int = INTERVAL_MS,
    max_steps: int | None = None,
) -> dict:
    """Measures `cases` bursts and their references on a fresh server; `model` None: a copy of the embedded model."""
    if cases < 1 or keystrokes < 1:
        raise ValueError("cases and keystrokes must be at least 1")
    reset_case, chosen = select_cases(cases, keystrokes)
    options = {
        "diffusionInfill": {
            "mode": "single-line",
            **ENGINE_EVERY_TIME,
            **({"maxSteps": max_steps} if max_steps else {}),
        }
    }
    with tempfile.TemporaryDirectory() as scratch:
        served = model if model is not None else embedded_model_copy(Path(scratch))
        rows = asyncio.run(measure(served, reset_case, chosen, keystrokes, interval_ms, options))
    return summarize(rows, keystrokes, interval_ms, options)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="checkpoint directory (default: a copy of the embedded model)")
    parser.add_argument("--cases", type=int, default=5, help="bursts measured, one case each")
    parser.add_argument("--keystrokes", type=int, default=KEYSTROKES, help="characters typed per burst")
    parser.add_argument("--interval-ms", type=int, default=INTERVAL_MS, help="time between two keystrokes")
    parser.add_argument("--max-steps", type=int, help="denoising steps at most (default: the engine's)")
    args = parser.parse_args(argv)
    result = run(args.cases, args.model, args.keystrokes, args.interval_ms, args.max_steps)
    print(json.dumps({**run_header(args.model), **result}))


if __name__ == "__main__":
    main()
