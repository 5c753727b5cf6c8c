"""`diffusion-infill complete PATH:LINE:COL`: one completion, headless."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from diffusion_infill.cli import remote
from diffusion_infill.cli.inputs import CliError, plural, probability, read_text
from diffusion_infill.cli.models import (
    add_engine_options,
    add_model_options,
    check_device,
    check_model,
    load_model,
    start_torch,
)
from diffusion_infill.engine import languages, syntax_check
from diffusion_infill.engine.requests import Draft, InfillRequest
from diffusion_infill.lsp.text.positions import ColumnOutOfRange, LineOutOfRange, Lines
from diffusion_infill.lsp.text.window import around

DRAFT_COLOR, RESET = "\033[33m", "\033[0m"
SAVE_CURSOR, RESTORE_AND_CLEAR = "\0337", "\0338\033[J"  # as transformers' TextDiffusionStreamer


class LocationError(CliError):
    """PATH:LINE:COL does not name a position in the file."""


@dataclass(frozen=True)
class Location:
    path: Path
    line: int  # 1-based
    column: int  # 1-based, in characters

    @classmethod
    def parse(cls, spec: str) -> Location:
        try:
            path, line, column = spec.rsplit(":", 2)
            return cls(Path(path), int(line), int(column))
        except ValueError:
            raise LocationError(f"expected PATH:LINE:COL with 1-based numbers, got {spec!r}") from None

    def split(self, text: str) -> tuple[str, str]:
        """(prefix, suffix) of `text` at this location: the window the server would give the engine
        (lsp.text.window), so a 20 MB file or a 3 MB line is completed as a small file is, with no copy of
        either beyond the one read."""
        offset = self.offset(text)
        return around(text, offset, offset)

    def offset(self, text: str) -> int:
        """Where this location is in `text`, its lines ending where the server's do (lsp.text.positions),
        found without splitting it; a LocationError when it is not in it."""
        try:
            return Lines(text).character_offset(self.line - 1, self.column - 1)
        except LineOutOfRange:
            counted = len(text.splitlines())  # what an editor numbers: a final newline ends a line, starts none
            raise LocationError(
                f"{self.path} has {plural(counted, 'line')}; line {self.line} is out of range"
            ) from None
        except ColumnOutOfRange as error:
            characters = plural(error.length, "character")
            raise LocationError(
                f"line {self.line} of {self.path} has {characters}; column {self.column} is out of range"
            ) from None


def run(engine, location: Location, text: str, as_json: bool, min_confidence: float | None = None) -> int:
    """Completes `text` (the file's) at `location`; prints the drafts live on a terminal, and nothing
    when the completion's confidence is under `min_confidence` (as the server gates it). `shown`
    says whether the server would show it while typing: its gate at `min_confidence`, else at the
    threshold calibrated with the checkpoint, as the server's default settings do."""
    # imports torch: only once the input is checked
    from diffusion_infill.engine.completion.confidence import gate_threshold
    from diffusion_infill.lsp.completion.policy import Gate  # the server's own gate rule

    prefix, suffix = location.split(text)
    language = languages.language_for_path(str(location.path))
    request = InfillRequest(prefix, suffix, language, invoked=True)
    live = sys.stdout.isatty() and not as_json
    line_start = prefix.rsplit("\n", 1)[-1]
    if live:
        print(line_start + SAVE_CURSOR, end="", flush=True)

    started = time.perf_counter()
    drafts: list[str] = []
    first_draft_ms = None
    final: Draft | None = None
    for draft in engine.complete(request):
        if first_draft_ms is None:
            first_draft_ms = (time.perf_counter() - started) * 1000
        if draft.final:
            final = draft
            if drafts and drafts[-1] == draft.text:
                break
        drafts.append(draft.text)
        if live:
            print(f"{RESTORE_AND_CLEAR}{DRAFT_COLOR}{draft.text}{RESET}", end="", flush=True)
    total_ms = (time.perf_counter() - started) * 1000
    valid = syntax_check.check(prefix, final.text, suffix, language).valid
    printed = Gate(min_confidence or 0.0).passes(final.confidence)
    shown_text = final.text if printed else ""
    threshold = gate_threshold(min_confidence, getattr(engine, "calibration", None))  # as the server gates

    if as_json:
        result = {
            "text": shown_text,
            "steps": final.step,
            "drafts": drafts,
            "timings_ms": {
                "prefill": round(final.prefill_ms, 2),
                "first_draft": round(first_draft_ms, 2),
                "total": round(total_ms, 2),
            },
            "valid": valid,
            "confidence": None if final.confidence is None else round(final.confidence, 4),
            "shown": Gate(threshold).passes(final.confidence),
            "threshold": threshold,
            "source": final.source,  # engine.requests.SOURCES: the model's run, or a copied line it judged
        }
        print(json.dumps(result))
        return 0
    if live:
        print(f"{RESTORE_AND_CLEAR}{shown_text}")
    elif printed:
        print(shown_text)
    print(
        f"[{plural(final.step, 'step')}, {total_ms:.0f} ms, closure {'valid' if valid else 'BROKEN'}, "
        f"{_confidence_note(final.confidence, printed, min_confidence or 0.0)}]",
        file=sys.stderr,
    )
    return 0


def _confidence_note(confidence: float | None, shown: bool, min_confidence: float) -> str:
    """How sure the completion is, for the summary line; says so when it was not printed."""
    if confidence is None:
        return "confidence unknown"  # a checkpoint without confidence.json, or a remote engine
    note = f"confidence {confidence:.2f}"
    return note if shown else f"{note}, under --min-confidence {min_confidence:g}: not printed"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("location", help="PATH:LINE:COL, e.g. src/diffusion_infill/cli/samples/shapes.py:10:24")
    parser.add_argument("--json", action="store_true", help="print one JSON object on the last line")
    parser.add_argument(
        "--min-confidence",
        type=probability,
        metavar="P",
        help="print nothing when the completion's estimated chance of being accepted is under P "
        "(the server's minConfidence; default: always print, and --json's `shown` is judged "
        "at the threshold calibrated with the checkpoint, as the server's default)",
    )
    add_engine_options(parser)
    add_model_options(parser)
    remote.add_options(parser)


def main(args: argparse.Namespace) -> int:
    """Checks the location, the model and the device, then loads the model and completes."""
    location = Location.parse(args.location)
    text = read_text(location.path)
    location.split(text)  # the position is checked before the model loads
    server = remote.remote_settings(args)
    check_model(args)
    check_device(args)
    start_torch(args)
    from diffusion_infill.engine.factory import create_engine
    from diffusion_infill.engine.settings import EngineSettings

    settings = EngineSettings(mode=args.mode).with_overrides(
        max_gap_tokens=args.max_gap_tokens, max_steps=args.max_steps, entropy_bound=args.entropy_bound
    )
    engine = remote.connect(server, settings, args.seed) if server else create_engine(load_model(args), settings)
    return run(engine, location, text, args.json, args.min_confidence)
