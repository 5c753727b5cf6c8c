"""diffusion-infill: inline infilling with a text-diffusion model, as a language server (serve) and on the
command line (complete, fix), with its training and benchmark."""

# Arguments are parsed and input is checked before torch and transformers are imported
# (seconds on a loaded machine): only the command handlers import them, after the checks,
# and torch alone first, to ask about the GPU, before the model stack.

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from diffusion_infill.bench.compare import add_arguments as add_bench_arguments
from diffusion_infill.cli import remote
from diffusion_infill.cli.inputs import (
    CliError,
    Parser,
    check_listen,
    device_name,
    dtype_name,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    probability,
    read_text,
    shape,
    tcp_address,
)
from diffusion_infill.engine.checkpoint import ModelLoadError, model_problem
from diffusion_infill.engine.drafts import MODES

if TYPE_CHECKING:
    from diffusion_infill.engine.loading import LoadedModel

SAMPLE = Path(__file__).parent / "samples" / "shapes.py"
TRAIN_DEFAULTS = {"diffusion": (Path("runs/tiny"), Path("src/diffusion_infill/engine/model")),
                  "fim": (Path("runs/fim"), Path("src/diffusion_infill/bench/fim_model"))}  # run dir, export dir


def _model_options(parser: argparse.ArgumentParser, optional: bool = False) -> None:
    """`optional`: `--model` alone turns the model on (fix: without it, deterministic repairs only)."""
    if optional:
        parser.add_argument("--model", metavar="DIR_OR_ID", nargs="?", const="", help="use the model's candidates "
                            "too: the embedded model (engine/model), or this checkpoint directory or hub id in the "
                            "local hub cache (default: deterministic repairs only, without torch; the model is "
                            "loaded for --kind regenerate); with --engine openai: the served model's name")
    else:
        parser.add_argument("--model", metavar="DIR_OR_ID", help="checkpoint directory, or hub id in the local hub "
                            "cache (default: the embedded model, engine/model); with --engine openai: the served "
                            "model's name")
    parser.add_argument("--device", type=device_name, default="auto", help="auto, cpu, cuda, cuda:N or mps "
                        "(default: auto, CUDA when torch sees a GPU)")
    parser.add_argument("--dtype", type=dtype_name, default="auto", help="auto, float32, bfloat16 or float16 "
                        "(default: auto, bfloat16 on CUDA, else float32)")
    parser.add_argument("--trust-remote-code", action="store_true", help="allow code shipped with a checkpoint")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="sampling seed (default 0)")
    parser.add_argument("--threads", type=positive_int, metavar="N",
                        help="torch CPU threads (default: half the cores, at least 1)")


def _engine_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-gap-tokens", type=positive_int, metavar="N",
                        help="slots for the insertion (default: what the checkpoint was trained with)")
    parser.add_argument("--max-steps", type=positive_int, metavar="N",
                        help="denoising steps at most (default: the engine's; early stopping usually ends sooner)")
    parser.add_argument("--entropy-bound", type=positive_float, metavar="X",
                        help="summed entropy of the tokens accepted per step (default: the engine's)")
    parser.add_argument("--mode", choices=MODES, default="auto", help="how many lines an insertion may span "
                        "(default: auto, multi-line on an empty line)")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="diffusion-infill", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    commands = parser.add_subparsers(dest="command", required=True)

    complete = commands.add_parser("complete", help="complete at PATH:LINE:COL (1-based, COL in characters)")
    complete.add_argument("location", help="PATH:LINE:COL, e.g. src/diffusion_infill/cli/samples/shapes.py:11:37")
    complete.add_argument("--json", action="store_true", help="print one JSON object on the last line")
    complete.add_argument("--min-confidence", type=probability, default=0.0, metavar="P",
                          help="print nothing when the completion's estimated chance of being accepted is under P "
                          "(the server's minConfidence; default 0: always print)")
    _engine_options(complete)
    _model_options(complete)
    remote.add_options(complete)

    serve = commands.add_parser("serve", help="run the language server on stdio (or --tcp)")
    transport = serve.add_mutually_exclusive_group()
    transport.add_argument("--stdio", action="store_true", help="speak on stdin and stdout (the default; what LSP "
                           "clients pass)")
    transport.add_argument("--tcp", metavar="[HOST:]PORT", help="listen on TCP instead of stdio (default host "
                           "127.0.0.1; port 0: any free one)")
    serve.add_argument("--telemetry", type=Path, metavar="FILE", help="acceptance counts (default: "
                       "$XDG_STATE_HOME/diffusion-infill/acceptance.json)")
    _engine_options(serve)
    _model_options(serve)
    remote.add_options(serve)

    fix = commands.add_parser("fix", help="fix a JSON or Markdown file (or a range of it); prints the result")
    fix.add_argument("path", type=Path, help="the file (JSON, JSONC or Markdown; others with --kind)")
    fix.add_argument("--range", metavar="L1:C1-L2:C2", help="only this part (1-based, columns in characters, end "
                     "exclusive)")
    fix.add_argument("--kind", choices=("auto", "json", "jsonc", "markdown", "regenerate"), default="auto",
                     help="what to do (default: by the text and the file's extension)")
    fix.add_argument("--json", action="store_true", help="print one JSON object on the last line")
    fix.add_argument("--write", action="store_true", help="write the fixed text back to the file")
    fix.add_argument("--no-model", action="store_true", help="deterministic repairs only, the default (kept for "
                     "scripts that pass it)")
    _model_options(fix, optional=True)
    remote.add_options(fix)

    train = commands.add_parser("train", help="train the embedded model, or the autoregressive baseline (resumable)")
    train.add_argument("--objective", choices=tuple(TRAIN_DEFAULTS), default="diffusion",
                       help="diffusion: the embedded model; fim: the autoregressive fill-in-the-middle baseline")
    train.add_argument("--run-dir", type=Path, metavar="DIR",
                       help="checkpoints, logs, probes (default: runs/tiny, runs/fim)")
    train.add_argument("--export", type=Path, metavar="DIR", help="save_pretrained directory (default: "
                       "src/diffusion_infill/engine/model, src/diffusion_infill/bench/fim_model)")
    train.add_argument("--init-from", type=Path, metavar="DIR",
                       help="continue from exported weights (fresh optimizer; steps "
                       "and CPU hours count on from their recipe.json)")
    train.add_argument("--max-steps", type=positive_int, default=10**9, metavar="N", help="stop at this optimizer step")
    train.add_argument("--max-minutes", type=positive_float, metavar="M", help="stop after this wall time")
    train.add_argument("--max-cpu-hours", type=positive_float, metavar="H",
                       help="stop when training has used this much CPU time in all")
    train.add_argument("--cooldown-hours", type=non_negative_float, metavar="C",
                       help="with --max-cpu-hours: the learning rate "
                       "falls linearly to a tenth over the last this many CPU hours")
    train.add_argument("--seed", type=int, default=0, metavar="N", help="data order, noise and weights (default 0)")
    train.add_argument("--noise", choices=("mask", "uniform"), default="mask",
                       help="diffusion: the noise of the objective (default mask)")
    train.add_argument("--threads", type=positive_int, metavar="N", help="torch CPU threads (default: torch's choice)")
    train.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                       help="bf16: matmuls in bfloat16 under autocast (weights stay float32)")
    train.add_argument("--max-prefix", type=positive_int, default=128, metavar="N", help="prefix tokens the model sees "
                       "(training and inference; batches draw a quarter, half or all of it)")
    train.add_argument("--ar-first-hours", type=non_negative_float, default=0.0, metavar="H",
                       help="diffusion: CPU hours of "
                       "the encoder's autoregressive loss alone before the joint loss")
    train.add_argument("--context-tokens", type=non_negative_int, default=0, metavar="N",
                       help="of --max-prefix, tokens given to lines from further up the file that share names "
                       "with the cursor's line (training and inference; default 0: none)")
    train.add_argument("--after-end", choices=("ignore", "pad"), default="ignore",
                       help="diffusion: gap slots after END out of the loss, or PAD targets")
    train.add_argument("--shape", type=shape, default=(4, 256), metavar="LAYERSxWIDTH",
                       help="diffusion: a new model's layers and width (default 4x256; heads 64 wide)")
    train.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                       help="where to train (auto: a CUDA GPU when there is one)")
    train.add_argument("--workers", type=non_negative_int, help="DataLoader processes making batches (default: "
                       "0 on the CPU, which keeps a run reproducible; 6 on a GPU)")
    train.add_argument("--prefixes", type=positive_int, help="prefixes a batch (default 12 on the CPU, 192 on a GPU)")
    train.add_argument("--learning-rate", type=positive_float, default=2e-3, help="peak learning rate")
    train.add_argument("--warmup-steps", type=positive_int, default=200, help="steps of linear warm-up")
    train.add_argument("--cooldown-minutes", type=non_negative_float, help="with --max-minutes: the learning "
                       "rate falls linearly to a tenth over the last this many minutes")
    train.add_argument("--corpus", choices=("stdlib", "stdlib+pypi"), default="stdlib",
                       help="stdlib+pypi adds the PyPI token stream "
                       "(python -m diffusion_infill.engine.training.pypi_corpus)")
    train.add_argument("--corpus-dir", type=Path,
                       help="where the PyPI token stream lies (default runs/pypi-corpus)")
    train.add_argument("--weighting", choices=("inverse_t", "plain"), default="inverse_t",
                       help="diffusion: each noised slot's loss over its noise level t, or plain cross-entropy")
    bench = commands.add_parser("bench", help="the diffusion engine beside the autoregressive baseline, held-out cases")
    add_bench_arguments(bench)
    return parser


def _bench(args: argparse.Namespace) -> int:
    from diffusion_infill.bench.compare import baseline_problem
    from diffusion_infill.bench.compare import main as bench_main

    if problem := baseline_problem(args.baseline):
        raise CliError(problem)
    return bench_main(args)  # limits torch threads itself, as the server does


def _check_model(args: argparse.Namespace) -> None:
    """--model, as far as its files tell, before torch loads; a served model (--engine openai) is the server's."""
    if args.engine == "local" and (problem := model_problem(args.model)):
        raise CliError(problem)


def _check_device(args: argparse.Namespace) -> None:
    """--device against what torch sees: imports torch alone, before the model stack."""
    from diffusion_infill.engine.devices import pick_device

    if args.engine == "local":
        try:
            pick_device(args.device)
        except ModelLoadError as error:
            raise CliError(str(error)) from None


def _start_torch(args: argparse.Namespace) -> None:
    """Imports torch (once the input is checked), seeds it and limits its threads as the server does."""
    import torch

    from diffusion_infill.engine.settings import default_threads

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads or default_threads())


def _load(args: argparse.Namespace) -> LoadedModel:
    """The --model checkpoint on --device; a failure is one line naming what was tried."""
    from diffusion_infill.engine.loading import load

    try:
        return load(args.model, args.device, args.dtype, trust_remote_code=args.trust_remote_code)
    except ModelLoadError as error:
        raise CliError(str(error)) from None


def _complete(args: argparse.Namespace) -> int:
    from diffusion_infill.cli.complete import Location, run

    location = Location.parse(args.location)
    text = read_text(location.path)
    location.split(text)  # the position is checked before the model loads
    server = remote.remote_settings(args)
    _check_model(args)
    _check_device(args)
    _start_torch(args)
    from diffusion_infill.engine.factory import create_engine
    from diffusion_infill.engine.settings import EngineSettings

    settings = EngineSettings(mode=args.mode).with_overrides(
        max_gap_tokens=args.max_gap_tokens, max_steps=args.max_steps, entropy_bound=args.entropy_bound)
    engine = remote.connect(server, settings, args.seed) if server else create_engine(_load(args), settings)
    return run(engine, location, text, args.json, args.min_confidence)


def _fix_loads_model(args: argparse.Namespace, kind: str) -> bool:
    """Whether `fix` uses a model: asked for with --model (or --engine openai), or needed by --kind
    regenerate. Without one the deterministic repairs answer alone: measured, the embedded model's
    candidates changed almost no answer and cost seconds of loading (docs/fixes.md)."""
    wanted = args.model is not None or args.engine == "openai" or kind == "regenerate"
    if wanted and args.no_model:
        raise CliError("--no-model and " + ("--kind regenerate" if kind == "regenerate" and args.model is None
                                           else "--model") + " ask for opposite things: pass one of them")
    return wanted


def _fix(args: argparse.Namespace) -> int:
    from diffusion_infill.cli.fix import Selection, pick_kind, run
    from diffusion_infill.engine.repair.fixes import Fixer

    text = read_text(args.path, exact=True)
    selection = Selection.parse(args.range, text)
    kind = pick_kind(args.kind, args.path, text[selection.start : selection.end])
    ranged = args.range is not None
    if not _fix_loads_model(args, kind):  # the deterministic repairs: no torch, no model stack
        why = "--no-model was given" if args.no_model else "no --model was given"
        return run(Fixer(None, why), args.path, text, selection, kind, args.json, args.write, ranged=ranged)
    args.model = args.model or None  # `--model` alone: the embedded model
    server = remote.remote_settings(args)
    _check_model(args)
    _check_device(args)
    _start_torch(args)
    if server is not None:
        from diffusion_infill.engine.remote.client import RemoteRepairer
        from diffusion_infill.engine.settings import EngineSettings

        return run(Fixer(RemoteRepairer(remote.connect(server, EngineSettings(), args.seed)), ""), args.path, text,
                   selection, kind, args.json, args.write, ranged=ranged)
    from diffusion_infill.engine.repair.diffusion import DiffusionRepairer, RepairSettings

    loaded = _load(args)
    canvas = loaded.spec is not None  # an instruction checkpoint: deterministic repairs only
    repairer = DiffusionRepairer(loaded, RepairSettings(seed=args.seed)) if canvas else None
    return run(Fixer(repairer, f"{loaded.source} was not trained on the infill canvas"), args.path, text, selection,
               kind, args.json, args.write, ranged=ranged)


def _serve(args: argparse.Namespace) -> int:
    address = tcp_address(args.tcp) if args.tcp else None
    remote.remote_settings(args)  # checked here; the server connects itself
    # A model or GPU that is not there does not stop the server: it says why in the editor, and the
    # diagnostics and deterministic fixes work without a model.
    if address is not None:
        check_listen(*address)
    _start_torch(args)
    from diffusion_infill.lsp.server import ServeOptions, create_server
    from diffusion_infill.lsp.settings import ServerSettings
    from diffusion_infill.lsp.telemetry import default_path

    settings = ServerSettings(model=args.model, device=args.device, dtype=args.dtype, mode=args.mode,
                              max_gap_tokens=args.max_gap_tokens, max_steps=args.max_steps,
                              entropy_bound=args.entropy_bound, engine=args.engine, url=args.url,
                              prompt_format=args.prompt_format, timeout=args.timeout,
                              invoked_timeout=args.invoked_timeout)
    server = create_server(ServeOptions(settings, args.telemetry or default_path(), args.trust_remote_code))
    if address is None:
        server.start_io()
    else:
        # pygls says where it listens at INFO ("Serving on (host, port)"): with --tcp 0 that line is
        # the only way to learn the port, and no editor files this stderr as errors.
        logging.getLogger("pygls.server").setLevel(logging.INFO)
        server.start_tcp(*address)
    return 0


def _train(args: argparse.Namespace) -> int:
    if args.context_tokens >= args.max_prefix:
        raise CliError(f"--context-tokens ({args.context_tokens}) must be below --max-prefix ({args.max_prefix})")
    import torch

    from diffusion_infill.engine.devices import pick_device
    from diffusion_infill.engine.tiny import TinyArchitecture
    from diffusion_infill.engine.training.fim import FIM_ARCHITECTURE
    from diffusion_infill.engine.training.objective import ObjectiveConfig
    from diffusion_infill.engine.training.train import FimTrainer, Runtime, TrainConfig, Trainer, TrainingSetupError

    if args.threads:
        torch.set_num_threads(args.threads)
    try:
        device = pick_device(args.device)
    except ModelLoadError as error:
        raise CliError(str(error)) from None
    on_gpu = device.type == "cuda"
    runtime = Runtime(device, args.workers if args.workers is not None else 6 * on_gpu,
                      args.corpus_dir or Runtime.corpus_dir)
    run_dir, export = TRAIN_DEFAULTS[args.objective]
    p = args.max_prefix
    objective = ObjectiveConfig(prefix_lengths=(p // 4, p // 2, p, p), after_end=args.after_end,
                                weighting=args.weighting, context_tokens=args.context_tokens,
                                prefixes=args.prefixes or (192 if on_gpu else 12))
    recipe = dict(seed=args.seed, precision=args.precision, max_prefix=p, corpus=args.corpus, objective=objective,
                  learning_rate=args.learning_rate, warmup_steps=args.warmup_steps,
                  probes=0 if on_gpu else TrainConfig.probes)  # the probe engine runs on the CPU only
    try:
        if args.objective == "fim":
            config = TrainConfig(objective_kind="fim", architecture=FIM_ARCHITECTURE, **recipe)
            trainer = FimTrainer(config, args.run_dir or run_dir, args.export or export, args.init_from, runtime)
        else:
            config = TrainConfig(noise=args.noise, ar_first_hours=args.ar_first_hours,
                                 architecture=TinyArchitecture.of_shape(*args.shape), **recipe)
            trainer = Trainer(config, args.run_dir or run_dir, args.export or export, args.init_from, runtime)
        trainer.train(args.max_steps, args.max_minutes, args.max_cpu_hours, args.cooldown_hours,
                      args.cooldown_minutes)
    except TrainingSetupError as error:
        raise CliError(str(error)) from None
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # The server's stderr is read by editors as errors (Neovim's lsp.log files every line as [ERROR]):
    # it says only what went wrong unless asked (-v: everything, pygls's message bodies too).
    quiet = logging.WARNING if args.command == "serve" else logging.INFO
    logging.basicConfig(level=logging.DEBUG if args.verbose else quiet, stream=sys.stderr,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if not args.verbose:
        logging.getLogger("transformers").setLevel(logging.ERROR)
    handlers = {"complete": _complete, "serve": _serve, "train": _train, "fix": _fix, "bench": _bench}
    try:
        return handlers[args.command](args)
    except CliError as error:  # bad input: one line, exit 2
        print(f"diffusion-infill: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
