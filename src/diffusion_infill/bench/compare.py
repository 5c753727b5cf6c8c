"""`diffusion-infill bench`: the diffusion engine beside the autoregressive baseline.

Both models are measured in one run, on the same held-out cases (diffusion_infill.bench.cases: code
never trained on), with the same context, closure rule and metrics (diffusion_infill.bench.metrics).
Each configuration runs in its own fresh process, one after another, so peak RSS is its
own and no two compete for the cores. Forward passes count every model call: for the
diffusion engine the prefix encoding plus each denoising step, for the baseline one per
generated token (END included; the first is the prefill).

Configurations: the diffusion engine at its defaults and the baseline (greedy, KV
cache; prompt lookup decoding only where the prompt repeats the tokens before the cursor), the
baseline with prompt lookup on every request and off (the ratios are against the faster of these
two, `ratios_against` names it), then ablations of the diffusion engine on the same cases (early stopping off,
entropy bound, closure repair off, a colder temperature schedule) and a typed-along scenario: after a first completion
the user types its first two characters and asks again, with warm start and KV reuse on
or off. In that scenario `exact_match` is whether the second completion is the rest of
the first (the suggestion stays put while the user types along it).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import multiprocessing
import os
import platform
from dataclasses import dataclass, field, replace
from pathlib import Path

from diffusion_infill.bench.cases import Case, build_cases, sources
from diffusion_infill.bench.metrics import aggregate, request_of, run_case
from diffusion_infill.cli.inputs import positive_int, probability
from diffusion_infill.cli.models import add_quantize_option

BASELINE_MODEL = Path(__file__).parent / "fim_model"  # in the source checkout only: not installed with the package
CASE_SEED = 20261202
TYPED_CHARACTERS = 2
QUICK_CASES = 10
FULL_CASES = 200  # a difference of 0.02 in mean edit similarity is past the noise at 200
RATIO_KEYS = (
    "forward_passes_mean",
    "step_ms_median",
    "latency_ms_p50",
    "latency_ms_p95",
    "first_draft_ms_p50",
    "exact_match",
    "edit_similarity_mean",
    "closure_valid",
)


@dataclass(frozen=True)
class Config:
    label: str
    family: str  # "diffusion" or "autoregressive"
    overrides: dict = field(default_factory=dict)  # EngineSettings / DenoiseSettings fields
    scenario: str = "cases"  # or "typed-along"
    warm_start: bool = True
    kv_reuse: bool = True


DIFFUSION = Config("diffusion", "diffusion")
AUTOREGRESSIVE = Config("autoregressive", "autoregressive")  # prompt lookup where it pays (baseline.lookup_pays)
# The baseline with prompt lookup decoding on every request and off: the ratios are against the faster of the two.
LOOKUP_ON = Config("autoregressive, prompt lookup on every request", "autoregressive", {"prompt_lookup_always": True})
LOOKUP_OFF = Config("autoregressive, prompt lookup off", "autoregressive", {"document_drafts": False})
ABLATIONS = (
    Config("diffusion, early stopping off", "diffusion", {"confidence_threshold": -1.0, "stable_insertion": 0}),
    Config("diffusion, entropy bound 0.1", "diffusion", {"entropy_bound": 0.1}),
    Config("diffusion, entropy bound 2.0", "diffusion", {"entropy_bound": 2.0}),
    # Above the live slots' mean entropy at the first step (about 3.7 nats): most slots accepted at once.
    Config("diffusion, entropy bound 8.0", "diffusion", {"entropy_bound": 8.0}),
    # Fast-dLLM's threshold beside the entropy bound, then alone (one slot a pass at least)
    Config("diffusion, accept above probability 0.9", "diffusion", {"accept_probability": 0.9}),
    Config(
        "diffusion, probability 0.9 and one slot a pass",
        "diffusion",
        {"accept_probability": 0.9, "entropy_bound": 1e-9},
    ),
    Config("diffusion, stop once the insertion is 1 pass stable", "diffusion", {"stable_insertion": 1}),
    Config("diffusion, closure repair off", "diffusion", {"repair_rounds": 0}),
    # the embedded model's sampler.json holds the colder schedule t 0.3 to 0.1: this is the one it replaced
    Config(
        "diffusion, transformers' schedule t 0.8 to 0.4",
        "diffusion",
        {"t_min": 0.4, "t_max": 0.8, "stable_insertion": 0},
    ),
    Config("diffusion, line-end stop off", "diffusion", {"stop_at_line_end": False}),
    # the levers of a cheaper step, each off (docs/performance.md)
    Config("diffusion, logits on the whole canvas", "diffusion", {"live_logits": False}),
    Config("diffusion, 24 gap slots from the start", "diffusion", {"first_gap_tokens": 24}),
)
TYPED_ALONG = (
    Config("typed along: diffusion", "diffusion", scenario="typed-along"),
    Config("typed along: diffusion, warm start off", "diffusion", scenario="typed-along", warm_start=False),
    Config("typed along: diffusion, KV reuse off", "diffusion", scenario="typed-along", kv_reuse=False),
    Config("typed along: autoregressive", "autoregressive", scenario="typed-along"),
)


METHOD = (
    "Method: `diffusion-infill bench`; each configuration in its own fresh process, one after another, "
    "on the same cases with the same context window and closure rule. Forward passes: diffusion = prefix "
    "encoding + denoising steps; autoregressive = one per generated token, the prefill included. Step: the "
    "median time between two drafts, one denoising or decoding step (the first draft not counted). Latency: "
    "request to final text, closure check and repair included. Typed along: exact = the second completion "
    "is the rest of the first. Ratios: diffusion over the faster (latency p50) of the baseline with prompt lookup "
    "on every request and off."
)


def _engine(config: Config, model: Path | None, baseline: Path, quantize: str = "none"):
    from diffusion_infill.engine.baseline.autoregressive import AutoregressiveEngine, load_fim
    from diffusion_infill.engine.factory import create_engine
    from diffusion_infill.engine.loading import load
    from diffusion_infill.engine.settings import EngineSettings

    settings = EngineSettings().with_overrides(**config.overrides)
    if config.family == "autoregressive":
        loaded = load_fim(baseline)
        return AutoregressiveEngine(loaded, settings), loaded.tokenizer, 0
    loaded = load(str(model) if model else None, quantize=quantize)
    return create_engine(loaded, settings), loaded.tokenizer, 1


def _typed_along(engine, case: Case, tokenizer, prefill_passes: int, config: Config) -> dict | None:
    from diffusion_infill.engine.completion.prefix_cache import PrefixCache
    from diffusion_infill.lsp.completion import without_run

    first = run_case(engine, case, tokenizer, prefill_passes)
    if len(first["text"]) <= TYPED_CHARACTERS:
        return None
    typed = first["text"][:TYPED_CHARACTERS]
    follow = replace(case, prefix=case.prefix + typed, expected=first["text"][TYPED_CHARACTERS:])
    if not config.kv_reuse:
        engine.prefix_cache = PrefixCache()
    rest = without_run.rest(request_of(case), first["text"], request_of(follow))
    return run_case(engine, follow, tokenizer, prefill_passes, start_text=rest if config.warm_start else None)


def measure(
    config: Config,
    model: Path | None,
    baseline: Path,
    cases: list[Case],
    threads: int,
    seed: int,
    quantize: str = "none",
) -> dict:
    """One configuration on all cases, the diffusion model's weights quantized as `quantize`; meant to run in
    a fresh process."""
    import resource  # POSIX only: imported by the run, not by the command line that names its options

    import torch

    torch.set_num_threads(threads)
    engine, tokenizer, prefill_passes = _engine(config, model, baseline, quantize)
    rows = []
    for index, case in enumerate(cases):
        # Each case draws from its own seed, so a lever that changes one case's passes leaves the
        # others' samples alone: two configurations compare case by case, not through drifted noise.
        torch.manual_seed(seed * 1_000_003 + index)
        if config.scenario != "typed-along":
            rows.append(run_case(engine, case, tokenizer, prefill_passes))
        elif row := _typed_along(engine, case, tokenizer, prefill_passes, config):
            rows.append(row)
    return {
        "label": config.label,
        "family": config.family,
        **aggregate(rows),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rows": rows,
    }


def measure_in_fresh_process(config: Config, *args) -> dict:
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(measure, config, *args).result()


def fastest(rows: list[dict]) -> dict:
    """The configuration with the lowest latency p50 (the first of equals)."""
    return min(rows, key=lambda row: row["latency_ms_p50"])


def ratios(diffusion: dict, autoregressive: dict) -> dict:
    """diffusion / autoregressive for each headline metric (None where the baseline is 0 or either is None)."""
    return {
        key: round(diffusion[key] / autoregressive[key], 3)
        if autoregressive[key] and diffusion[key] is not None
        else None
        for key in RATIO_KEYS
    }


def machine(threads: int) -> dict:
    import torch
    import transformers

    return {
        "cpus": os.cpu_count(),
        "threads": threads,
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "device": "cpu",
    }


def run(
    quick: bool,
    cases: int | None,
    model: Path | None,
    baseline: Path,
    threads: int,
    seed: int,
    typing_burst: bool,
    case_seed: int = CASE_SEED,
    quantize: str = "none",
) -> dict:
    chosen = build_cases(cases or (QUICK_CASES if quick else FULL_CASES), case_seed)
    results = {
        config.label: measure_in_fresh_process(config, model, baseline, chosen, threads, seed, quantize)
        for config in (DIFFUSION, AUTOREGRESSIVE, LOOKUP_ON, LOOKUP_OFF, *(() if quick else ABLATIONS + TYPED_ALONG))
    }
    diffusion, autoregressive = results.pop(DIFFUSION.label), results.pop(AUTOREGRESSIVE.label)
    lookup = [results.pop(LOOKUP_ON.label), results.pop(LOOKUP_OFF.label)]
    against = fastest(lookup)
    report = {
        "date": datetime.date.today().isoformat(),
        "machine": machine(threads),
        "cases": {
            "count": len(chosen),
            "seed": case_seed,
            "kinds": sorted({c.kind for c in chosen}),
            "sources": {"stdlib": "held-out 5% split", **sources()},
        },
        "diffusion": {"model": str(model or "embedded"), "quantize": quantize, **_recipe(model), **diffusion},
        "autoregressive": {
            "model": "src/diffusion_infill/bench/fim_model" if baseline == BASELINE_MODEL else str(baseline),
            **_recipe(baseline),
            **autoregressive,
        },
        "autoregressive_prompt_lookup": lookup,
        "ratios_diffusion_over_autoregressive": ratios(diffusion, against),
        "ratios_against": against["label"],
        "ablations": [results[c.label] for c in ABLATIONS if c.label in results],
        "typed_along": [results[c.label] for c in TYPED_ALONG if c.label in results],
    }
    if typing_burst and not quick:
        from diffusion_infill.bench.typing_burst import run as burst

        report["typing_burst"] = burst(cases=3, model=model)
    return report


def _recipe(directory: Path | None) -> dict:
    from diffusion_infill.engine.loading import EMBEDDED_MODEL

    path = (directory or EMBEDDED_MODEL) / "recipe.json"
    if not path.is_file():
        return {}
    recipe = json.loads(path.read_text())
    return {
        "training_step": recipe.get("step"),
        "training_cpu_hours": recipe.get("cpu_hours"),
        "parameters": recipe.get("parameters"),
    }


def without_rows(report: dict) -> dict:
    """The report without per-case rows (they go to the --out file only)."""

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "rows"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(report)


def table(report: dict) -> str:
    """A Markdown table of every configuration, for the README."""
    header = (
        "| configuration | exact | edit sim. | closure-valid | dup. closer | forward passes | tok/fwd | step p50 "
        "| first draft p50 | latency p50 / p95 | peak RSS |\n| --- | --- | --- | --- | --- | --- | --- | --- "
        "| --- | --- | --- |"
    )
    lines = [header]
    for row in [*_measured(report), *report["typed_along"]]:
        lines.append(
            f"| {row['label']} | {row['exact_match']:.2f} | {row['edit_similarity_mean']:.2f} | "
            f"{row['closure_valid']:.2f} | {row['duplicated_closer_rate']:.2f} | {row['forward_passes_mean']:.1f} | "
            f"{row['tokens_per_forward_mean']:.2f} | {_ms(row['step_ms_median'])} | "
            f"{row['first_draft_ms_p50']:.0f} ms | "
            f"{row['latency_ms_p50']:.0f} / {row['latency_ms_p95']:.0f} ms | {row['peak_rss_mb']:.0f} MB |"
        )
    m = report["machine"]
    lines.append(
        f"\n{report['date']}, {m['cpus']} CPUs ({m['processor']}), torch threads: {m['threads']}, torch "
        f"{m['torch']}, transformers {m['transformers']}; {report['cases']['count']} held-out cases "
        f"(seed {report['cases']['seed']}). Ratios diffusion / {report['ratios_against']}: "
        + ", ".join(f"{k} {v}" for k, v in report["ratios_diffusion_over_autoregressive"].items())
        + "."
    )
    lines.append(f"\n{METHOD}")
    return "\n".join(lines) + "\n"


def _measured(report: dict) -> list[dict]:
    """Every configuration on the cases themselves: both models and the ablations, not the typed-along ones."""
    return [
        report["diffusion"],
        report["autoregressive"],
        *report["autoregressive_prompt_lookup"],
        *report["ablations"],
    ]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def plot(report: dict, path: Path) -> None:
    """Quality against forward passes and against latency, every configuration of both models."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = _measured(report)
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for axis, key, label in (
        (axes[0], "forward_passes_mean", "forward passes per completion (mean)"),
        (axes[1], "latency_ms_p50", "latency p50 (ms)"),
    ):
        for row in rows:
            colour = "tab:blue" if row["family"] == "diffusion" else "tab:orange"
            axis.scatter(row[key], row["edit_similarity_mean"], color=colour, s=60 if "," not in row["label"] else 25)
            axis.annotate(
                row["label"].replace("diffusion, ", ""),
                (row[key], row["edit_similarity_mean"]),
                fontsize=7,
                xytext=(4, 4),
                textcoords="offset points",
            )
        axis.set_xlabel(label)
        axis.set_ylabel("edit similarity to the original (mean)")
        axis.grid(alpha=0.3)
    m = report["machine"]
    figure.suptitle(
        f"diffusion (blue) vs autoregressive FIM (orange), {report['cases']['count']} held-out cases; "
        f"{report['date']}, {m['cpus']} CPUs, torch threads: {m['threads']}",
        fontsize=9,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def baseline_problem(baseline: Path) -> str | None:
    """Why `baseline` cannot be benchmarked against, in one line; None when it has its spec file."""
    from diffusion_infill.engine.baseline.autoregressive import SPEC_FILE

    if (baseline / SPEC_FILE).is_file():
        return None
    if baseline == BASELINE_MODEL:
        return (
            "the benchmark's baseline checkpoint is not installed with the package: run `bash install.sh` in a "
            "checkout of the repository (src/diffusion_infill/bench/fim_model), or pass --baseline DIR"
        )
    return (
        f"no autoregressive baseline at {baseline} (missing {SPEC_FILE}); train one with "
        "`diffusion-infill train --objective fim`"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_CASES} cases, both models, no ablations")
    parser.add_argument(
        "--cases",
        type=positive_int,
        metavar="N",
        help=f"number of cases (default {FULL_CASES}, {QUICK_CASES} with --quick)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object on the last line")
    parser.add_argument(
        "--out", type=Path, metavar="DIR", help="write bench.json (with per-case rows), table.md and plot.png here"
    )
    parser.add_argument("--model", type=Path, metavar="DIR", help="diffusion checkpoint (default: the embedded model)")
    add_quantize_option(parser, "the diffusion model's", "; not with --replay")
    parser.add_argument(
        "--baseline",
        type=Path,
        default=BASELINE_MODEL,
        metavar="DIR",
        help="autoregressive baseline checkpoint (default: src/diffusion_infill/bench/fim_model)",
    )
    parser.add_argument(
        "--threads", type=positive_int, metavar="N", help="torch threads (default: half the cores, as the server)"
    )
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="sampling seed (default 0)")
    parser.add_argument(
        "--case-seed",
        type=int,
        default=CASE_SEED,
        metavar="N",
        help=f"which cases (default {CASE_SEED}, the reported ones; checkpoints and decoding "
        f"settings are chosen on others, e.g. {CASE_SEED + 11})",
    )
    parser.add_argument("--no-typing-burst", action="store_true", help="skip the typing burst through the server")
    parser.add_argument(
        "--replay",
        action="store_true",
        help="type held-out code through the server instead: how "
        "often the suggestions shown are right (diffusion_infill.bench.replay)",
    )
    parser.add_argument(
        "--files", type=positive_int, metavar="N", help="--replay: excerpts typed (default 8, 2 with --quick)"
    )
    parser.add_argument(
        "--chars",
        type=positive_int,
        metavar="N",
        help="--replay: characters per excerpt (default 600, 300 with --quick)",
    )
    parser.add_argument(
        "--min-confidence",
        type=probability,
        metavar="P",
        help="--replay: the server's minConfidence (default: its own)",
    )
    parser.add_argument(
        "--tuning",
        action="store_true",
        help="--replay: excerpts of the tuning files (where settings are chosen) instead of the reported ones",
    )
    parser.add_argument(
        "--paths",
        type=Path,
        nargs="+",
        metavar="PATH",
        help="--replay: type excerpts of these Python files or folders (your own code; files of more than 60 "
        "lines) instead",
    )
    parser.add_argument(
        "--settings", metavar="JSON", help="--replay: more diffusionInfill settings for the server, a JSON object"
    )
    parser.add_argument(
        "--log", type=Path, metavar="FILE", help="--replay: write every request and its outcome here (JSON lines)"
    )
    parser.add_argument(
        "--show-drafts",
        action="store_true",
        help="--replay: the client paints every draft before the answer (the editors' drafts setting; off by "
        "default), and flashed_drafts counts those the answer withdrew",
    )
    parser.add_argument(
        "--pause-ms",
        type=positive_int,
        default=400,
        metavar="MS",
        help="--replay: a typist's pause at a word or line end; "
        "an answer later than this after the key that began it is never shown (default 400)",
    )


def main(args: argparse.Namespace) -> int:
    if args.replay:
        from diffusion_infill.bench import replay

        return replay.main(args)
    from diffusion_infill.engine.settings import default_threads

    threads = args.threads or default_threads()
    report = run(
        args.quick,
        args.cases,
        args.model,
        args.baseline,
        threads,
        args.seed,
        not args.no_typing_burst,
        args.case_seed,
        args.quantize,
    )
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench.json").write_text(json.dumps(report, indent=1) + "\n")
        (args.out / "table.md").write_text(table(report))
        plot(report, args.out / "plot.png")
    if args.json:
        print(json.dumps(without_rows(report)))
    else:
        print(table(report))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    raise SystemExit(main(parser.parse_args()))
