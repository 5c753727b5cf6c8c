"""Where a diffusion completion's forward passes go, and the sampler settings tuned per checkpoint.

`python -m diffusion_infill.bench.passes --cases 100 --case-seed 777` runs the diffusion engine on tuning
cases and prints, per case, its denoising passes (the prefix encoding not counted) and how
many of them kept no token before END, kept exactly one, re-decided a slot that held a token,
came after the insertion up to END was already the final one, or accepted only slots past
the final END (diffusion_infill.engine.completion.sampler.PassCounts); then the totals.

`--tune` re-derives the checkpoint's sampler.json (diffusion_infill.engine.completion.denoise_settings.TUNED_FIELDS):
the temperature schedule (SCHEDULES) and then the entropy bound (BOUNDS) with the fewest
forward passes among those whose edit similarity and exact match are no lower than the
untuned settings' (transformers' schedule, bound 0.5), then `stable_insertion`, the longest
run of passes whose insertion stayed the same and was still not the final one (stopping
after that many unchanged passes never changed a final answer on these cases). `--write`
saves it beside the checkpoint. Choose on tuning cases only, never on the reported seed (bench.compare.CASE_SEED).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from diffusion_infill.bench.cases import build_cases
from diffusion_infill.bench.compare import CASE_SEED, Config, measure_in_fresh_process
from diffusion_infill.cli.inputs import positive_int

BOUNDS = (1.0, 2.0, 4.0, 8.0)  # above the untuned 0.5: a smaller bound only costs passes
SCHEDULES = ({"t_min": 0.1, "t_max": 0.3},)  # colder than transformers' 0.8 to 0.4
SUMMARY = (
    "edit_similarity_mean",
    "exact_match",
    "forward_passes_mean",
    "tokens_per_forward_mean",
    "step_ms_median",
    "latency_ms_p50",
    "latency_ms_p95",
    "first_draft_ms_p50",
)
REPORTED = (*SUMMARY, "passes_without_reveal_mean", "passes_after_final_mean")
COUNTS = ("passes", "without_reveal", "one_token", "redecided", "after_final", "past_end")


def measure(cases: int, case_seed: int, model: Path | None, threads: int, overrides: dict, seed: int = 0) -> dict:
    from diffusion_infill.bench.compare import BASELINE_MODEL

    config = Config("diffusion", "diffusion", overrides)
    return measure_in_fresh_process(config, model, BASELINE_MODEL, build_cases(cases, case_seed), threads, seed)


def table(result: dict) -> str:
    lines = ["| case | kind | " + " | ".join(COUNTS) + " | text |", "|" + " --- |" * (len(COUNTS) + 3)]
    for row in result["rows"]:
        counts = row["pass_counts"]
        lines.append(
            f"| {row['name']} | {row['kind']} | "
            + " | ".join(str(counts[k]) for k in COUNTS)
            + f" | {json.dumps(row['text'])} |"
        )
    means = {k: statistics.fmean(row["pass_counts"][k] for row in result["rows"]) for k in COUNTS}
    lines.append("| mean | | " + " | ".join(f"{means[k]:.2f}" for k in COUNTS) + " | |")
    lines.append("\n" + ", ".join(f"{key} {result[key]:.3f}" for key in SUMMARY))
    return "\n".join(lines)


def stable_passes(result: dict) -> int:
    """The longest run of unchanged passes that was not final, over the cases (at least 1)."""
    return max([1, *(row["pass_counts"]["unfinal_run"] for row in result["rows"])])


def choose(runs: list[tuple[dict, dict]], reference: dict) -> tuple[dict, dict]:
    """The run with the fewest forward passes among those whose edit similarity and exact match are no
    lower than the reference's, and its settings."""
    good = [
        (values, run)
        for values, run in runs
        if run["edit_similarity_mean"] >= reference["edit_similarity_mean"]
        and run["exact_match"] >= reference["exact_match"]
    ]
    return min(good, key=lambda item: item[1]["forward_passes_mean"])


def tune(cases: int, case_seed: int, model: Path | None, threads: int, seed: int = 0) -> dict:
    """The checkpoint's sampler.json values, chosen on these cases (each run in its own process): the
    schedule at the untuned bound, then the bound with that schedule, then the stability."""
    from diffusion_infill.engine.completion.denoise_settings import UNTUNED

    runs = []

    def run(values: dict) -> tuple[dict, dict]:
        result = measure(cases, case_seed, model, threads, {**UNTUNED, **values, "stable_insertion": 0}, seed)
        runs.append({**values, **{k: round(result[k], 4) for k in REPORTED}})
        return values, result

    reference = run({})
    schedule, _ = choose([reference, *(run(s) for s in SCHEDULES)], reference[1])
    chosen, chosen_run = choose([run(schedule), *(run({**schedule, "entropy_bound": b}) for b in BOUNDS)], reference[1])
    values = {**UNTUNED, **chosen, "stable_insertion": stable_passes(chosen_run)}
    return {"values": values, "runs": runs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=positive_int, default=100)
    parser.add_argument("--case-seed", type=int, default=CASE_SEED + 11)
    parser.add_argument("--model", type=Path, help="diffusion checkpoint (default: the embedded model)")
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="sampling seed (default 0)")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an EngineSettings / DenoiseSettings field, as JSON (repeatable)",
    )
    parser.add_argument("--tune", action="store_true", help="re-derive the checkpoint's sampler.json")
    parser.add_argument("--write", action="store_true", help="--tune: save sampler.json beside the checkpoint")
    args = parser.parse_args()
    if args.case_seed == CASE_SEED:
        parser.error(f"--case-seed {CASE_SEED} is the reported cases' seed: tune and inspect on others")
    if args.tune:
        from diffusion_infill.engine.completion.denoise_settings import save_tuning
        from diffusion_infill.engine.loading import EMBEDDED_MODEL

        tuned = tune(args.cases, args.case_seed, args.model, args.threads, args.seed)
        print(json.dumps(tuned))
        if args.write:
            save_tuning(
                args.model or EMBEDDED_MODEL,
                tuned["values"],
                f"diffusion_infill.bench.passes --tune, {args.cases} cases, case seed {args.case_seed}",
            )
        return 0
    overrides = {}
    for item in args.set:
        name, _, value = item.partition("=")
        overrides[name] = json.loads(value)
    print(table(measure(args.cases, args.case_seed, args.model, args.threads, overrides, args.seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
