"""`diffusion-infill bench`: the options are diffusion_infill.bench.compare's; its needs are checked before the run."""

from __future__ import annotations

import argparse

from diffusion_infill.bench.compare import add_arguments, baseline_problem
from diffusion_infill.bench.compare import main as bench_main
from diffusion_infill.cli.inputs import CliError
from diffusion_infill.engine.checkpoint import quantize_problem

__all__ = ["add_arguments", "main"]


def need_matplotlib() -> None:
    """--out draws plot.png at the end of a run of minutes: a missing matplotlib is said before it starts."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise CliError(
            "bench --out draws plot.png with matplotlib, which is not installed: "
            "pip install matplotlib (or install.sh's '.[dev]'), or leave out --out"
        ) from None


def need_a_device_for(quantize: str) -> None:
    """The diffusion model loads on auto's device in each configuration's process: a mode that device
    cannot run is said once, here, not as a traceback from the first of them."""
    if quantize == "int4":
        import torch

        if not torch.cuda.is_available() and (problem := quantize_problem(quantize, "cpu")):
            raise CliError(problem)


def main(args: argparse.Namespace) -> int:
    if args.out is not None:
        need_matplotlib()
    need_a_device_for(args.quantize)
    if problem := baseline_problem(args.baseline):
        raise CliError(problem)
    return bench_main(args)  # limits torch threads itself, as the server does
