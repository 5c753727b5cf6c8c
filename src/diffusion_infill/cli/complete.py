"""`diffusion-infill complete PATH:LINE:COL`: one completion, headless."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from diffusion_infill.cli.inputs import CliError, plural
from diffusion_infill.engine import closure
from diffusion_infill.engine.drafts import Draft, InfillRequest

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
        """(prefix, suffix) of `text` at this location."""
        lines = text.split("\n")
        if not 1 <= self.line <= len(lines):
            raise LocationError(f"{self.path} has {plural(len(lines), 'line')}; line {self.line} is out of range")
        if not 1 <= self.column <= len(lines[self.line - 1]) + 1:
            characters = plural(len(lines[self.line - 1]), "character")
            raise LocationError(f"line {self.line} of {self.path} has {characters}; "
                                f"column {self.column} is out of range")
        offset = sum(len(line) + 1 for line in lines[: self.line - 1]) + self.column - 1
        return text[:offset], text[offset:]


def run(engine, location: Location, text: str, as_json: bool, min_confidence: float = 0.0) -> int:
    """Completes `text` (the file's) at `location`; prints the drafts live on a terminal, and nothing
    when the completion's confidence is under `min_confidence` (as the server gates it)."""
    # imports torch: only once the input is checked
    from diffusion_infill.engine.completion.confidence import clears_gate

    prefix, suffix = location.split(text)
    language = closure.language_for_path(str(location.path))
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
    valid = closure.check(prefix, final.text, suffix, language).valid
    shown = clears_gate(final.confidence, min_confidence)
    shown_text = final.text if shown else ""

    if as_json:
        result = {
            "text": shown_text,
            "steps": final.step,
            "drafts": drafts,
            "timings_ms": {"prefill": round(final.prefill_ms, 2), "first_draft": round(first_draft_ms, 2),
                           "total": round(total_ms, 2)},
            "valid": valid,
            "confidence": None if final.confidence is None else round(final.confidence, 4),
            "shown": shown,
            "source": final.source,  # engine.drafts.SOURCES: the model's run, or a copied line it judged
        }
        print(json.dumps(result))
        return 0
    if live:
        print(f"{RESTORE_AND_CLEAR}{shown_text}")
    elif shown:
        print(shown_text)
    print(f"[{final.step} steps, {total_ms:.0f} ms, closure {'valid' if valid else 'BROKEN'}, "
          f"{_confidence_note(final.confidence, shown, min_confidence)}]", file=sys.stderr)
    return 0


def _confidence_note(confidence: float | None, shown: bool, min_confidence: float) -> str:
    """How sure the completion is, for the summary line; says so when it was not printed."""
    if confidence is None:
        return "confidence unknown"  # a checkpoint without confidence.json, or a remote engine
    note = f"confidence {confidence:.2f}"
    return note if shown else f"{note}, under --min-confidence {min_confidence:g}: not printed"
