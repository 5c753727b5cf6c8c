"""Training loss curves of run directories (`diffusion-infill train --run-dir`), side by side.

Each run's `log.jsonl` has one line per logged step: its losses (diffusion, ar, fim), the
learning rate and the CPU hours so far. The plot puts every loss of every run against CPU
hours (the budget the recipe experiments are compared at) and against optimizer steps
(where a cheaper step shows as the same curve reached sooner), each a moving mean over
`--smooth` logged points, because a single batch's loss is noisy.

    python -m diffusion_infill.bench.training_curves runs/arm-fp32 runs/arm-bf16 --out docs/img/precision.png

Prints one JSON object on the last line: per run, its last step, CPU hours, CPU seconds per
step and the mean of each loss over its last `--smooth` logged points.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from pathlib import Path

NOT_LOSSES = {"step", "loss", "lr", "cpu_hours", "time"}


def read_log(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines() if line.strip()]


def losses(rows: list[dict]) -> list[str]:
    """The loss components a run logged (the total is their sum and is left out)."""
    return sorted({key for row in rows for key in row} - NOT_LOSSES)


def moving_mean(values: list[float], window: int) -> list[float]:
    return [statistics.fmean(values[max(0, i - window + 1) : i + 1]) for i in range(len(values))]


def summary(rows: list[dict], window: int) -> dict:
    last = rows[-1]
    return {
        "step": last["step"],
        "cpu_hours": last["cpu_hours"],
        "cpu_s_per_step": round(last["cpu_hours"] * 3600 / last["step"], 2),
        **{key: round(statistics.fmean(row[key] for row in rows[-window:] if key in row), 3) for key in losses(rows)},
    }


def plot(runs: dict[str, list[dict]], window: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for colour, (name, rows) in zip(
        itertools.cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"]), runs.items(), strict=False
    ):
        for style, key in zip(itertools.cycle(("-", "--", ":")), losses(rows), strict=False):
            kept = [row for row in rows if key in row]
            smooth = moving_mean([row[key] for row in kept], window)
            label = f"{name}: {key}"
            axes[0].plot([row["cpu_hours"] for row in kept], smooth, style, color=colour, label=label)
            axes[1].plot([row["step"] for row in kept], smooth, style, color=colour, label=label)
    axes[0].set_xlabel("CPU core-hours")
    axes[1].set_xlabel("optimizer steps")
    axes[0].set_ylabel(f"loss, nats (mean of {window} logs)")
    axes[1].legend(fontsize=7)
    for axis in axes:
        axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", help="run directories, each with a log.jsonl")
    parser.add_argument("--out", type=Path, help="write the plot here (PNG)")
    parser.add_argument("--smooth", type=int, default=4, help="logged points per moving mean")
    args = parser.parse_args(argv)
    missing = [str(run) for run in args.runs if not (run / "log.jsonl").is_file()]
    if missing:
        parser.exit(2, f"training_curves: no log.jsonl in {', '.join(missing)}\n")
    runs = {run.name: read_log(run) for run in args.runs}
    empty = [name for name, rows in runs.items() if not rows]
    if empty:
        parser.exit(2, f"training_curves: nothing logged yet in {', '.join(empty)}\n")
    if args.out:
        plot(runs, args.smooth, args.out)
    print(json.dumps({name: summary(rows, args.smooth) for name, rows in runs.items()}))


if __name__ == "__main__":
    main()
