"""`diffusion-infill train`: its options, and the checks made before torch is imported.

A run writes only inside its run directory (checkpoints, logs, probes, and the exported weights
in RUN/model) unless `--export DIR` names somewhere else; a DIR that already holds a
checkpoint is replaced only with `--force`, so the shipped model cannot be overwritten by accident.
With `--init-from DIR`, what the objective and precision were is read from DIR's recipe.json
unless given: a continuation trains what its weights were trained for.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from diffusion_infill.cli.inputs import (
    CliError,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    probability,
    shape,
)
from diffusion_infill.engine.checkpoint import ModelLoadError
from diffusion_infill.engine.training.progress import UNBOUNDED_STEPS

RUN_DIRS = {"diffusion": Path("runs/tiny"), "fim": Path("runs/fim")}
EXPORT_NAME = "model"  # the run's own export: RUN/model
CHECKPOINT_FILES = ("config.json", "model.safetensors")  # a folder with either holds a checkpoint
INTERRUPTED = 130  # the exit status of a run stopped with Ctrl-C, as shells give it
# Options a continuation takes from the recipe.json of the weights it continues from, unless given:
# option: (where the value lies in the recipe's config, the default without a recipe)
INHERITED = {
    "objective": (("objective_kind",), "diffusion"),
    "noise": (("noise",), "mask"),
    "precision": (("precision",), "fp32"),
    "max_prefix": (("max_prefix",), 128),
    "after_end": (("objective", "after_end"), "ignore"),
    "weighting": (("objective", "weighting"), "inverse_t"),
    "context_tokens": (("objective", "context_tokens"), 0),
    "draft_fraction": (("objective", "draft_fraction"), 0.0),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--objective",
        choices=tuple(RUN_DIRS),
        help="diffusion: the embedded model (default); fim: the autoregressive fill-in-the-middle baseline",
    )
    parser.add_argument(
        "--run-dir",
        type=Path,
        metavar="DIR",
        help="checkpoints, logs, probes and the exported weights (RUN/model) (default: runs/tiny, runs/fim)",
    )
    parser.add_argument(
        "--export",
        type=Path,
        metavar="DIR",
        help="save_pretrained the weights here instead of "
        "RUN/model (the embedded model: src/diffusion_infill/engine/model; needs --force where DIR "
        "holds a checkpoint)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="let --export replace the checkpoint in DIR (its "
        "confidence.json and sampler.json are removed: they were chosen for the old weights)",
    )
    parser.add_argument(
        "--init-from",
        type=Path,
        metavar="DIR",
        help="continue from exported weights (fresh optimizer; steps and CPU hours count on from their "
        "recipe.json, and the objective and precision options not given are its; its confidence gate is copied)",
    )
    parser.add_argument(
        "--max-steps", type=positive_int, default=UNBOUNDED_STEPS, metavar="N", help="stop at this optimizer step"
    )
    parser.add_argument("--max-minutes", type=positive_float, metavar="M", help="stop after this wall time")
    parser.add_argument(
        "--max-cpu-hours",
        type=positive_float,
        metavar="H",
        help="stop when training has used this much CPU time in all",
    )
    parser.add_argument(
        "--cooldown-hours",
        type=non_negative_float,
        metavar="C",
        help="with --max-cpu-hours: the learning rate falls linearly to a tenth over the last this many CPU hours",
    )
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="data order, noise and weights (default 0)")
    parser.add_argument(
        "--noise",
        choices=("mask", "uniform"),
        help="diffusion: the noise of the objective (default mask)",
    )
    parser.add_argument("--threads", type=positive_int, metavar="N", help="torch CPU threads (default: torch's choice)")
    parser.add_argument(
        "--precision",
        choices=("fp32", "bf16"),
        help="bf16: matmuls in bfloat16 under autocast (weights stay float32; default fp32)",
    )
    parser.add_argument(
        "--max-prefix",
        type=positive_int,
        metavar="N",
        help="prefix tokens the model sees (training and inference; batches draw a quarter, half or all of it; "
        "default 128)",
    )
    parser.add_argument(
        "--ar-first-hours",
        type=non_negative_float,
        default=0.0,
        metavar="H",
        help="diffusion: CPU hours of the encoder's autoregressive loss alone before the joint loss",
    )
    parser.add_argument(
        "--context-tokens",
        type=non_negative_int,
        metavar="N",
        help="of --max-prefix, tokens given to lines from further up the file that share names "
        "with the cursor's line (training and inference; default 0: none)",
    )
    parser.add_argument(
        "--after-end",
        choices=("ignore", "pad"),
        help="diffusion: gap slots after END out of the loss (ignore, the default), or PAD targets",
    )
    parser.add_argument(
        "--shape",
        type=shape,
        default=(4, 256),
        metavar="LAYERSxWIDTH",
        help="diffusion: a new model's layers and width (default 4x256; heads 64 wide)",
    )
    parser.add_argument(
        "--device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="where to train (auto: a CUDA GPU when there is one)",
    )
    parser.add_argument(
        "--workers",
        type=non_negative_int,
        help="DataLoader processes making batches (default: 0 on the CPU, which keeps a run reproducible; 6 on a GPU)",
    )
    parser.add_argument("--prefixes", type=positive_int, help="prefixes a batch (default 12 on the CPU, 192 on a GPU)")
    parser.add_argument("--learning-rate", type=positive_float, default=2e-3, help="peak learning rate")
    parser.add_argument("--warmup-steps", type=positive_int, default=200, help="steps of linear warm-up")
    parser.add_argument(
        "--cooldown-minutes",
        type=non_negative_float,
        help="with --max-minutes: the learning rate falls linearly to a tenth over the last this many minutes",
    )
    parser.add_argument(
        "--corpus",
        choices=("stdlib", "stdlib+pypi"),
        default="stdlib",
        help="stdlib+pypi adds the PyPI token stream (python -m diffusion_infill.engine.training.pypi_corpus)",
    )
    parser.add_argument("--corpus-dir", type=Path, help="where the PyPI token stream lies (default runs/pypi-corpus)")
    parser.add_argument(
        "--weighting",
        choices=("inverse_t", "plain"),
        help="diffusion: each noised slot's loss over its noise level t (the default), or plain cross-entropy",
    )
    parser.add_argument(
        "--draft-fraction",
        type=probability,
        metavar="P",
        help="diffusion: single-gap canvases that hold a draft to judge instead of noise, the loss "
        "on every gap slot (revision canvases; default 0: none)",
    )


def holds_checkpoint(directory: Path) -> bool:
    return any((directory / name).exists() for name in CHECKPOINT_FILES)


def destinations(args: argparse.Namespace) -> tuple[Path, Path]:
    """The run directory and where its weights are exported; an --export over a checkpoint needs --force."""
    run_dir = args.run_dir or RUN_DIRS[args.objective]
    if args.export is None:
        return run_dir, run_dir / EXPORT_NAME
    if holds_checkpoint(args.export) and not args.force:
        raise CliError(
            f"{args.export} already holds a checkpoint; pass --force to replace it (its calibration "
            "goes with it), or leave out --export to keep the weights in the run directory"
        )
    return run_dir, args.export


def _recipe_config(init_from: Path | None) -> dict:
    """The config in the recipe.json of the weights a run continues from ({} from scratch)."""
    if init_from is None:
        return {}
    if not init_from.is_dir():
        raise CliError(f"--init-from {init_from}: no such directory")
    recipe = init_from / "recipe.json"
    try:
        return json.loads(recipe.read_text()).get("config", {}) if recipe.exists() else {}
    except (OSError, ValueError, AttributeError) as error:
        raise CliError(f"cannot read {recipe}: {error}") from None


def inherit(args: argparse.Namespace) -> list[str]:
    """Fills the options of INHERITED not given: from the recipe continued from, else their defaults.
    Returns the options taken from the recipe, as `--option value`."""
    config, taken = _recipe_config(args.init_from), []
    for option, (path, default) in INHERITED.items():
        if getattr(args, option) is not None:
            continue
        value = config
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            value = default
        elif value != default:
            taken.append(f"--{option.replace('_', '-')} {value}")
        setattr(args, option, value)
    return taken


def main(args: argparse.Namespace) -> int:
    taken = inherit(args)
    if taken:
        print(
            f"train: continuing from {args.init_from} as its recipe.json says: {', '.join(taken)} "
            "(give an option to change it)",
            file=sys.stderr,
        )
    if args.context_tokens >= args.max_prefix:
        raise CliError(f"--context-tokens ({args.context_tokens}) must be below --max-prefix ({args.max_prefix})")
    run_dir, export = destinations(args)
    try:
        return _train(args, run_dir, export)
    except KeyboardInterrupt:  # before the first step: loading, or setting up (a tokenizer trained is kept)
        print(
            f"train: interrupted before the first step, nothing to resume: {_same_command()} starts again",
            file=sys.stderr,
        )
        return INTERRUPTED


def _train(args: argparse.Namespace, run_dir: Path, export: Path) -> int:
    """The run, once its options are checked: torch imported, the trainer made, trained, exported."""
    import torch

    from diffusion_infill.engine.devices import pick_device
    from diffusion_infill.engine.tiny import TinyArchitecture
    from diffusion_infill.engine.training.fim import FIM_ARCHITECTURE
    from diffusion_infill.engine.training.objective import ObjectiveConfig
    from diffusion_infill.engine.training.train import (
        FimTrainer,
        Interrupted,
        Runtime,
        TrainConfig,
        Trainer,
        TrainingSetupError,
    )

    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        device = pick_device(args.device)
    except ModelLoadError as error:
        raise CliError(str(error)) from None
    on_gpu = device.type == "cuda"
    runtime = Runtime(
        device,
        args.workers if args.workers is not None else 6 * on_gpu,
        args.corpus_dir or Runtime.corpus_dir,
        say=_say,
    )
    p = args.max_prefix
    objective = ObjectiveConfig(
        prefix_lengths=(p // 4, p // 2, p, p),
        after_end=args.after_end,
        weighting=args.weighting,
        context_tokens=args.context_tokens,
        draft_fraction=args.draft_fraction,
        prefixes=args.prefixes or (192 if on_gpu else 12),
    )
    recipe = dict(
        seed=args.seed,
        precision=args.precision,
        max_prefix=p,
        corpus=args.corpus,
        objective=objective,
        learning_rate=args.learning_rate,
        warmup_steps=args.warmup_steps,
        probes=0 if on_gpu else TrainConfig.probes,
    )  # the probe engine runs on the CPU only
    try:
        if args.objective == "fim":
            config = TrainConfig(objective_kind="fim", architecture=FIM_ARCHITECTURE, **recipe)
            trainer = FimTrainer(config, run_dir, export, args.init_from, runtime)
        else:
            config = TrainConfig(
                noise=args.noise,
                ar_first_hours=args.ar_first_hours,
                architecture=TinyArchitecture.of_shape(*args.shape),
                **recipe,
            )
            trainer = Trainer(config, run_dir, export, args.init_from, runtime)
        trainer.train(args.max_steps, args.max_minutes, args.max_cpu_hours, args.cooldown_hours, args.cooldown_minutes)
    except TrainingSetupError as error:
        raise CliError(str(error)) from None
    except Interrupted as stopped:
        print(
            f"train: interrupted at step {stopped.step:,}, saved in {stopped.checkpoint}; "
            f"resume with: {_same_command()}",
            file=sys.stderr,
        )
        return INTERRUPTED
    print(_exported_line(args, export, trainer.parent_gate is not None))
    return 0


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _same_command() -> str:
    """The command line that ran this one: run again, it resumes from the run directory's checkpoint."""
    words = sys.argv[1:]
    return "diffusion-infill " + shlex.join(words[words.index("train") :] if "train" in words else ["train"])


def _exported_line(args: argparse.Namespace, export: Path, copied_gate: bool) -> str:
    flag = "--baseline" if args.objective == "fim" else "--model"
    fit = f"`python -m diffusion_infill.bench.calibrate {flag} {export} --write` fits one"
    if copied_gate:
        return (
            f"weights exported to {export} with the confidence gate of {args.init_from}, which was fitted "
            f"for those weights, not these: {fit}"
        )
    return f"weights exported to {export}, uncalibrated (no confidence gate): {fit}"
