"""Inline completion latency through the real language server, as an editor sees it.

Starts `diffusion-infill serve` on stdio, opens one document per held-out case (the
cases of diffusion_infill.bench.heldout: mid-line cursors in stdlib files never trained on) and sends one
Automatic `textDocument/inlineCompletion` at the cursor, waiting for each answer before
the next. Latency is from sending the request to receiving the answer; first draft is
from sending it to the first `infill/draft` notification. The first request (it waits
for the model to load) is not counted. Prints one JSON object on the last line.

    python -m diffusion_infill.bench.lsp_latency --cases 40
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from diffusion_infill.bench.heldout import CASE_SEED
from diffusion_infill.bench.metrics import percentile
from diffusion_infill.engine.loading import EMBEDDED_MODEL
from diffusion_infill.engine.training.probes import held_out_line_cases

log = logging.getLogger(__name__)
STATUS_NOTIFICATION = "infill/status"  # docs/protocol.md


class Recorder:
    """When the first draft and the final draft of each document arrived, and which versions got a
    final draft (a run that finished; a superseded one never sends it)."""

    def __init__(self) -> None:
        self.first: dict[str, float] = {}
        self.final: dict[str, object] = {}
        self.answered: set[tuple[str, int]] = set()  # (uri, version)

    def receive(self, params) -> None:
        self.first.setdefault(params.uri, time.perf_counter())
        if params.final:
            self.final[params.uri] = params
            self.answered.add((params.uri, params.version))


async def request(client: LanguageClient, uri: str, position: types.Position):
    params = types.InlineCompletionParams(
        context=types.InlineCompletionContext(trigger_kind=types.InlineCompletionTriggerKind.Automatic),
        text_document=types.TextDocumentIdentifier(uri),
        position=position,
    )
    return await client.text_document_inline_completion_async(params)


def end_position(text: str) -> types.Position:
    """The position at the end of `text`, in UTF-16 units."""
    lines = text.split("\n")
    return types.Position(len(lines) - 1, len(lines[-1].encode("utf-16-le")) // 2)


def embedded_model_copy(directory: Path) -> Path:
    """A copy of the embedded model in `directory`: training may rewrite engine/model while a bench runs."""
    model = directory / "model"
    shutil.copytree(EMBEDDED_MODEL, model)
    return model


# These benches measure the engine: every request runs it, wherever the cursor is and whatever
# the document repeats (no quiet characters, no document drafts; docs/replay.md).
ENGINE_EVERY_TIME = {"documentDrafts": False, "quietAfter": ""}


def run_header(model: Path | None) -> dict:
    """The keys a server benchmark's JSON starts with: when, which model (None: the embedded one) at which
    training step, on how many CPUs."""
    recipe = (model or EMBEDDED_MODEL) / "recipe.json"
    return {
        "date": datetime.date.today().isoformat(),
        "model": str(model or "embedded"),
        "model_step": json.loads(recipe.read_text()).get("step") if recipe.exists() else None,
        "cpus": os.cpu_count(),
    }


async def start_server(
    client: LanguageClient, model: Path, telemetry: Path, options: dict, *extra: str, verbose: bool = False, **process
) -> None:
    """Starts `diffusion-infill serve` on stdio and initializes it for inline completion with `options`
    (initializationOptions). `extra`: more serve options; `verbose`: debug logging on its stderr;
    `process`: for the subprocess (e.g. env)."""
    listen_to_status(client)
    await client.start_io(
        sys.executable,
        "-m",
        "diffusion_infill.cli.main",
        *(["-v"] if verbose else []),
        "serve",
        "--model",
        str(model),
        "--telemetry",
        str(telemetry),
        *extra,
        **process,
    )
    capabilities = types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(inline_completion=types.InlineCompletionClientCapabilities())
    )
    await client.initialize_async(types.InitializeParams(capabilities=capabilities, initialization_options=options))
    client.initialized(types.InitializedParams())


def listen_to_status(client: LanguageClient) -> None:
    """Handles what the server says of its state (window/logMessage, infill/status), which pygls would
    otherwise warn about as unknown: an error is logged (a model that fails to load would else be
    only a timeout), the rest is for an editor's status line."""

    def on_log(ls, params: types.LogMessageParams) -> None:
        if params.type == types.MessageType.Error:
            log.error("server: %s", params.message)

    client.feature(types.WINDOW_LOG_MESSAGE)(on_log)
    client.feature(STATUS_NOTIFICATION)(lambda ls, params: None)


async def measure(model: Path, cases, options: dict) -> dict:
    client = LanguageClient("lsp-latency-bench", "1")
    recorder = Recorder()
    client.feature("infill/draft")(lambda ls, params: recorder.receive(params))
    with tempfile.TemporaryDirectory() as state:
        await start_server(client, model, Path(state) / "acceptance.json", options)
        rows = []
        for index, case in enumerate(cases):
            uri = f"file:///bench/case{index}.py"
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, case.prefix + case.suffix))
            )
            started = time.perf_counter()
            answer = await request(client, uri, end_position(case.prefix))
            finished = time.perf_counter()
            final = recorder.final.get(uri)
            rows.append(
                {
                    "total_ms": (finished - started) * 1000,
                    "first_draft_ms": (recorder.first.get(uri, finished) - started) * 1000,
                    "steps": final.step if final else 0,
                    "items": len(answer or []),
                }
            )
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
    return summarize(rows[1:])  # the first one waited for the model to load


def summarize(rows: list[dict]) -> dict:
    totals, firsts = [r["total_ms"] for r in rows], [r["first_draft_ms"] for r in rows]
    return {
        "requests": len(rows),
        "latency_ms_p50": round(percentile(totals, 0.5), 1),
        "latency_ms_p95": round(percentile(totals, 0.95), 1),
        "first_draft_ms_p50": round(percentile(firsts, 0.5), 1),
        "first_draft_ms_p95": round(percentile(firsts, 0.95), 1),
        "steps_median": statistics.median(r["steps"] for r in rows),
        "answered_with_items": sum(r["items"] > 0 for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="checkpoint directory (default: a copy of the embedded model)")
    parser.add_argument("--cases", type=int, default=40, help="requests measured (one more warms up)")
    parser.add_argument("--max-steps", type=int, help="denoising steps at most (default: the engine's)")
    args = parser.parse_args()
    cases = held_out_line_cases(args.cases + 1, seed=CASE_SEED)
    options = {
        "diffusionInfill": {
            "mode": "single-line",
            **ENGINE_EVERY_TIME,
            **({"maxSteps": args.max_steps} if args.max_steps else {}),
        }
    }
    with tempfile.TemporaryDirectory() as scratch:
        model = args.model or embedded_model_copy(Path(scratch))
        result = asyncio.run(measure(model, cases, options))
    print(
        json.dumps(
            {
                **run_header(args.model),
                "settings": options["diffusionInfill"],
                **result,
            }
        )
    )


if __name__ == "__main__":
    main()
