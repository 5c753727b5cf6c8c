"""The options `complete`, `fix` and `serve` share (the checkpoint, its device and dtype, the engine's
settings) and their checks, made before torch is imported: torch alone first, to ask about the GPU,
then the model stack."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from diffusion_infill.cli.inputs import CliError, device_name, dtype_name, positive_float, positive_int
from diffusion_infill.engine.checkpoint import QUANTIZE, ModelLoadError, model_problem, quantize_problem
from diffusion_infill.engine.requests import MODES

if TYPE_CHECKING:
    from diffusion_infill.engine.baseline.autoregressive import FimModel
    from diffusion_infill.engine.loading import LoadedModel


def add_model_options(parser: argparse.ArgumentParser, optional: bool = False) -> None:
    """`optional`: `--model` alone turns the model on (fix: without it, deterministic repairs only)."""
    if optional:
        parser.add_argument(
            "--model",
            metavar="DIR_OR_ID",
            nargs="?",
            const="",
            help="use the model's candidates "
            "too: the embedded model (engine/model), or this checkpoint directory or hub id in the "
            "local hub cache (default: deterministic repairs only, without torch; the model is "
            "loaded for --kind regenerate); with --engine openai: the served model's name",
        )
    else:
        parser.add_argument(
            "--model",
            metavar="DIR_OR_ID",
            help="checkpoint directory, or hub id in the local hub "
            "cache (default: the embedded model, engine/model); with --engine openai: the served "
            "model's name",
        )
    parser.add_argument(
        "--device",
        type=device_name,
        default="auto",
        help="auto, cpu, cuda, cuda:N or mps (default: auto, CUDA when torch sees a GPU)",
    )
    parser.add_argument(
        "--dtype",
        type=dtype_name,
        default="auto",
        help="auto, float32, bfloat16 or float16 (default: auto, bfloat16 on CUDA, else float32)",
    )
    add_quantize_option(parser)
    parser.add_argument("--trust-remote-code", action="store_true", help="allow code shipped with a checkpoint")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="sampling seed (default 0)")
    parser.add_argument(
        "--threads", type=positive_int, metavar="N", help="torch CPU threads (default: half the cores, at least 1)"
    )


def add_quantize_option(parser: argparse.ArgumentParser, whose: str = "the", note: str = "") -> None:
    parser.add_argument(
        "--quantize",
        choices=QUANTIZE,
        default="none",
        help=f"store {whose} weights as int8 (CPU or CUDA) or int4 (CUDA, bfloat16) with torchao (default: "
        f"none; docs/real-model.md){note}",
    )


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-gap-tokens",
        type=positive_int,
        metavar="N",
        help="slots for the insertion (default: what the checkpoint was trained with)",
    )
    parser.add_argument(
        "--max-steps",
        type=positive_int,
        metavar="N",
        help="denoising steps at most (default: the checkpoint's, 24 on the clamped canvas; early stopping"
        " usually ends sooner)",
    )
    parser.add_argument(
        "--entropy-bound",
        type=positive_float,
        metavar="X",
        help="summed entropy of the tokens accepted per step (default: the engine's)",
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="auto",
        help="how many lines an insertion may span (default: auto, multi-line on an empty line)",
    )


def check_model(args: argparse.Namespace) -> None:
    """--model, as far as its files tell, before torch loads; a served model (--engine openai) is the server's."""
    if args.engine == "local" and (problem := model_problem(args.model)):
        raise CliError(problem)


def check_device(args: argparse.Namespace) -> None:
    """--quantize against --device (int4 is CUDA's), then --device against what torch sees: a GPU is asked
    of torch alone, before the model stack; auto and cpu are always there, so torch is not imported for
    them (serve answers its editor first)."""
    if args.engine == "local" and (problem := quantize_problem(args.quantize, args.device)):
        raise CliError(problem)
    if args.engine == "local" and args.device not in ("auto", "cpu"):
        from diffusion_infill.engine.devices import pick_device

        try:
            pick_device(args.device)
        except ModelLoadError as error:
            raise CliError(str(error)) from None


def start_torch(args: argparse.Namespace) -> None:
    """Imports torch (once the input is checked), seeds it and limits its threads as the server does."""
    from diffusion_infill.engine.devices import start_torch

    start_torch(args.seed, args.threads)


def load_model(args: argparse.Namespace) -> LoadedModel | FimModel:
    """The --model checkpoint on --device, or the autoregressive baseline as the server loads it (a
    directory with fim.json); a failure is one line naming what was tried."""
    from diffusion_infill.engine.factory import load_any

    try:
        return load_any(
            args.model, args.device, args.dtype, trust_remote_code=args.trust_remote_code, quantize=args.quantize
        )
    except ModelLoadError as error:
        raise CliError(str(error)) from None
