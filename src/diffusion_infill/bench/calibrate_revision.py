"""Fits the gate of judged line drafts (diffusion_infill.engine.completion.judge) of a checkpoint.

At every place diffusion_infill.bench.replay asks on the tuning excerpts (held-out files the replay
does not report), the lines copied from the code (engine.completion.copied_lines) are judged by
the model, as the engine does; each judged text is a row, accepted when the file's next
characters begin with it. A logistic model of acceptance on the judged text's features
(judge.FEATURES) is fitted on them. The threshold is the lowest at which the best-judged text
per place is accepted at least `--precision` of the times it is shown on the tuning excerpts
(showing is what a wrong suggestion costs), and `--write` saves both as `revision.json` beside
the checkpoint. The same is then measured on the reported excerpts, which the fit never saw.

    python -m diffusion_infill.bench.calibrate_revision --model DIR --write

With `--rules` it counts instead, per candidate rule, what the rules offer on the tuning excerpts
(no model).

Prints one JSON object on the last line of stdout.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import torch

from diffusion_infill.bench.replay import FULL_CHARS, FULL_FILES, Excerpt, asked, excerpts
from diffusion_infill.engine.completion import copied_lines, judge
from diffusion_infill.engine.completion.confidence import Calibration, fit_values, gate_threshold
from diffusion_infill.engine.completion.infill import InfillEngine
from diffusion_infill.engine.loading import EMBEDDED_MODEL, load
from diffusion_infill.engine.settings import EngineSettings

TUNING_FILES, TUNING_CHARS = 30, 600
PRECISION = 0.6  # the acceptance of shown suggestions the threshold keeps on the tuning excerpts
THRESHOLDS = [round(0.02 * i, 2) for i in range(1, 50)]


def places(engine: InfillEngine, pieces: list[Excerpt]) -> list[list[dict]]:
    """Per place the replay asks where some line is copied: each judged text, its features, and
    whether the file goes on with it."""
    found = []
    for request, upcoming in asked(pieces):
        candidates = copied_lines.candidates(request)
        judged = judge.judge(engine, request, candidates) if candidates else []
        if judged:
            found.append(
                [
                    {
                        "text": j.text,
                        "features": judge.features(j, request.prefix),
                        "accepted": upcoming.startswith(j.text),
                    }
                    for j in judged
                ]
            )
    return found


def rule_counts(pieces: list[Excerpt]) -> dict:
    """Per candidate rule, at the places the replay asks and the line goes on (no model): how often its
    candidate ranks first and is right there, and how often the rule offers one and some of them is right."""
    counts: dict = {"places": 0}
    for request, upcoming in asked(pieces):
        if not upcoming.split("\n", 1)[0].strip():
            continue
        counts["places"] += 1
        found = copied_lines.candidates(request)
        right = [upcoming.startswith(c.text) for c in found]
        for rule in {c.rule for c in found} | {"all"}:
            row = counts.setdefault(rule, dict.fromkeys(("first", "first_right", "offered", "some_right"), 0))
            mine = [ok for c, ok in zip(found, right, strict=True) if rule in ("all", c.rule)]
            if found and rule in ("all", found[0].rule):
                row["first"] += 1
                row["first_right"] += right[0]
            row["offered"] += bool(mine)
            row["some_right"] += any(mine)
    return counts


def shown_at(calibration: Calibration, found: list[list[dict]], threshold: float) -> dict:
    """What the gate shows at `threshold`: the best-estimated text per place, if it clears it."""
    shown = accepted = chars = 0
    for rows in found:
        chance, best = max(((calibration.chance(row["features"]), row) for row in rows), key=lambda pair: pair[0])
        if chance >= threshold:
            shown += 1
            accepted += best["accepted"]
            chars += len(best["text"]) if best["accepted"] else 0
    return {
        "threshold": threshold,
        "places": len(found),
        "shown": shown,
        "accepted": accepted,
        "precision": round(accepted / shown, 3) if shown else None,
        "chars_accepted": chars,
    }


def pick_threshold(calibration: Calibration, found: list[list[dict]], precision: float) -> float:
    """The lowest threshold whose shown texts are accepted at least `precision` of the time."""
    for threshold in THRESHOLDS:
        point = shown_at(calibration, found, threshold)
        if point["shown"] and point["precision"] >= precision:
            return threshold
    return THRESHOLDS[-1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=EMBEDDED_MODEL, help="diffusion checkpoint")
    parser.add_argument("--tuning-files", type=int, default=TUNING_FILES)
    parser.add_argument("--tuning-chars", type=int, default=TUNING_CHARS)
    parser.add_argument("--files", type=int, default=FULL_FILES, help="reported excerpts (as bench --replay)")
    parser.add_argument("--chars", type=int, default=FULL_CHARS)
    parser.add_argument("--precision", type=float, default=PRECISION)
    parser.add_argument("--write", action="store_true", help="save revision.json beside the checkpoint")
    parser.add_argument("--rules", action="store_true", help="count what each candidate rule offers (no model)")
    args = parser.parse_args(argv)
    if args.rules:
        print(json.dumps(rule_counts(excerpts(args.tuning_files, args.tuning_chars, tuning=True))))
        return
    torch.set_num_threads(1)
    engine = InfillEngine(load(str(args.model)), EngineSettings(mode="single-line"))
    tuning = places(engine, excerpts(args.tuning_files, args.tuning_chars, tuning=True))
    rows = [(row["features"], row["accepted"]) for found in tuning for row in found]
    calibration = fit_values(
        rows, fitted_on=f"{len(rows)} judged texts at {len(tuning)} places of {args.tuning_files} tuning excerpts"
    )
    # The server offers a completion only at or above the checkpoint's own minConfidence: a judged line
    # under it would be hidden where denoising might have answered, so the engine's cut is never lower.
    gate = gate_threshold(None, engine.calibration)
    calibration = replace(calibration, threshold=max(pick_threshold(calibration, tuning, args.precision), gate))
    if args.write:
        calibration.save(args.model, judge.REVISION_FILE)
    reported = places(engine, excerpts(args.files, args.chars))
    print(
        json.dumps(
            {
                "calibration": calibration.__dict__,
                "tuning": shown_at(calibration, tuning, calibration.threshold),
                "reported": shown_at(calibration, reported, calibration.threshold),
            }
        )
    )


if __name__ == "__main__":
    main()
