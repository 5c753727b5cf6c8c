"""Fits the confidence estimate (diffusion_infill.engine.completion.confidence) of a checkpoint, and measures it.

At every place diffusion_infill.bench.replay asks (word ends, line ends, after indentation) of the tuning
excerpts (held-out files that the replay does not report), the engine completes the
file's true text so far, in-process, with the server's default settings; a completion is
accepted when the file's next characters begin with it. A logistic model of acceptance
on the completion's evidence is fitted on those, and written to the checkpoint's
`confidence.json` with `--write`, together with the checkpoint's default `minConfidence`:
the threshold that maximises characters saved per wrong suggestion shown on the tuning
excerpts (saved / (wrong + 1), so that showing nothing does not win). The same is then measured on the
reported excerpts, which the fit never saw: the precision/coverage curve, plotted with
`--plot`.

    python -m diffusion_infill.bench.calibrate --write --plot docs/img/confidence.png

With `--drafts` it counts instead, at the same places, how often the document's own draft
(engine.completion.repeated_text) is right, per kind of draft: the counts its estimate is made of.

Prints one JSON object on the last line of stdout.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, replace
from pathlib import Path

import torch

from diffusion_infill.bench.compare import BASELINE_MODEL
from diffusion_infill.bench.replay import FULL_CHARS, FULL_FILES, Excerpt, asked, excerpts
from diffusion_infill.engine.completion import repeated_text
from diffusion_infill.engine.completion.confidence import Calibration, Evidence, fit
from diffusion_infill.engine.factory import create_engine, load_any
from diffusion_infill.engine.loading import EMBEDDED_MODEL
from diffusion_infill.engine.settings import EngineSettings

THRESHOLDS = [round(0.05 * i, 2) for i in range(1, 20)]
TUNING_FILES, TUNING_CHARS = 12, 500


def observations(engine, pieces: list[Excerpt]) -> list[dict]:
    """One row per place the replay asks: the completion, its evidence, and whether it is accepted."""
    rows = []
    for request, upcoming in asked(pieces):
        final = list(engine.complete(request))[-1]
        if final.text:
            rows.append({"text": final.text, "evidence": final.evidence, "accepted": upcoming.startswith(final.text)})
    return rows


def draft_counts(pieces: list[Excerpt]) -> dict[str, tuple[int, int]]:
    """Per kind of document draft: (accepted whole, offered) at every place the replay asks."""
    counts: dict[str, tuple[int, int]] = {}
    for request, upcoming in asked(pieces):
        draft = repeated_text.offer(request)
        if draft is not None:
            kind = repeated_text.kind(draft, request.prefix)
            accepted, offered = counts.get(kind, (0, 0))
            counts[kind] = (accepted + upcoming.startswith(draft.text), offered + 1)
    return counts


def curve(rows: list[dict], calibration: Calibration) -> list[dict]:
    """At each threshold: suggestions shown (of all non-empty ones), precision, characters saved
    and wrong suggestions shown."""
    scored = [(calibration.estimate(row["evidence"]), row) for row in rows]
    points = []
    for threshold in [0.0, *THRESHOLDS]:
        shown = [row for score, row in scored if score >= threshold]
        right = [row for row in shown if row["accepted"]]
        saved = sum(len(row["text"]) for row in right)
        points.append(
            {
                "threshold": threshold,
                "shown": len(shown),
                "accepted": len(right),
                "coverage": round(len(shown) / max(len(rows), 1), 3),
                "precision": round(len(right) / len(shown), 3) if shown else None,
                "chars_saved": saved,
                "wrong": len(shown) - len(right),
                "saved_per_wrong": round(saved / (len(shown) - len(right) + 1), 2),
            }
        )
    return points


def best_threshold(points: list[dict]) -> float:
    return max(points, key=lambda point: (point["saved_per_wrong"], -point["threshold"]))["threshold"]


def measure(path: Path, tuning: list[Excerpt], reported: list[Excerpt], write: bool, rows: Path | None) -> dict:
    loaded = load_any(str(path))
    # the model's own completions: judged copied lines have their own gate (bench.calibrate_revision)
    engine = create_engine(loaded, EngineSettings(document_drafts=False))
    tuning_rows = observations(engine, tuning)
    calibration = fit(
        [(row["evidence"], row["accepted"]) for row in tuning_rows],
        fitted_on=f"{len(tuning_rows)} completions on {len(tuning)} tuning excerpts (bench.calibrate)",
    )
    tuning_curve = curve(tuning_rows, calibration)
    previous = engine.calibration  # the checkpoint's: its quiet characters come from the replay, not this fit
    calibration = replace(
        calibration, threshold=best_threshold(tuning_curve), quiet_after=previous.quiet_after if previous else ""
    )
    if write:
        calibration.save(path)
    reported_rows = observations(engine, reported)
    if rows is not None:
        rows.write_text(json.dumps({"tuning": tuning_rows, "reported": reported_rows}, default=asdict))
    return {
        "model": str(path),
        "calibration": asdict(calibration),
        "tuning": tuning_curve,
        "reported": curve(reported_rows, calibration),
        "base_rate": {"tuning": _rate(tuning_rows), "reported": _rate(reported_rows)},
    }


def _rate(rows: list[dict]) -> float:
    return round(sum(row["accepted"] for row in rows) / max(len(rows), 1), 3)


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.5, 4.5))
    for family, colour in (("diffusion", "tab:blue"), ("autoregressive", "tab:orange")):
        points = [p for p in report[family]["reported"] if p["shown"]]
        axis.plot(
            [p["coverage"] for p in points],
            [p["precision"] for p in points],
            "o-",
            color=colour,
            label=f"{family} (reported excerpts)",
            markersize=3,
        )
        for p in points:
            if p["threshold"] in (0.0, report[family]["calibration"]["threshold"]):
                axis.annotate(
                    f"{p['threshold']:g}",
                    (p["coverage"], p["precision"]),
                    fontsize=7,
                    xytext=(4, 4),
                    textcoords="offset points",
                )
    axis.axhline(0.5, color="grey", linewidth=0.5)
    axis.set_xlabel("coverage: completions shown / completions the engine made")
    axis.set_ylabel("precision: accepted / shown")
    axis.set_title("confidence gating: each point a minConfidence threshold", fontsize=9)
    axis.legend(fontsize=8)
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, default=EMBEDDED_MODEL, help="diffusion checkpoint")
    parser.add_argument("--baseline", type=Path, default=BASELINE_MODEL, help="autoregressive baseline")
    parser.add_argument("--tuning-files", type=int, default=TUNING_FILES)
    parser.add_argument("--tuning-chars", type=int, default=TUNING_CHARS)
    parser.add_argument("--files", type=int, default=FULL_FILES, help="reported excerpts (as bench --replay)")
    parser.add_argument("--chars", type=int, default=FULL_CHARS)
    parser.add_argument("--write", action="store_true", help="save confidence.json beside each checkpoint")
    parser.add_argument("--plot", type=Path, help="write the precision/coverage curve here")
    parser.add_argument("--rows", type=Path, help="save every completion with its evidence here, a file per model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--drafts", action="store_true", help="count how often the document's own drafts are right, per kind (no model)"
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    tuning = excerpts(args.tuning_files, args.tuning_chars, tuning=True)
    reported = excerpts(args.files, args.chars)
    if args.drafts:
        print(json.dumps({"tuning": draft_counts(tuning), "reported": draft_counts(reported)}))
        return
    report = {
        family: measure(
            path, tuning, reported, args.write, args.rows and args.rows.with_name(f"{args.rows.stem}-{family}.json")
        )
        for family, path in (("diffusion", args.model), ("autoregressive", args.baseline))
    }
    report["tuning_excerpts"] = [piece.name for piece in tuning]
    if args.plot:
        plot(report, args.plot)
    print(json.dumps(report, default=lambda value: asdict(value) if isinstance(value, Evidence) else str(value)))


if __name__ == "__main__":
    main()
