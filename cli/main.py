"""Entry point of the `diffusion-infill` command."""

# Arguments are parsed and input is checked before torch and transformers are imported
# (seconds on a loaded machine): only the command handlers import them, after the checks.

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from bench.compare import add_arguments as add_bench_arguments
from cli import remote
from cli.inputs import CliError, Parser, non_negative_float, positive_float, positive_int, read_text, shape
from engine.drafts import MODES

if TYPE_CHECKING:
    from engine.loading import LoadedModel

SAMPLE = Path(__file__).parent / "samples" / "shapes.py"
TRAIN_DEFAULTS = {"diffusion": (Path("runs/tiny"), Path("engine/model")),
                  "fim": (Path("runs/fim"), Path("bench/fim_model"))}  # run dir, export dir


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="checkpoint directory or hub id in the local cache (default: embedded)")
    parser.add_argument("--device", default="auto", help="cpu, cuda, cuda:1 ... (default: auto)")
    parser.add_argument("--dtype", default="auto", help="float32, bfloat16 ... (default: auto)")
    parser.add_argument("--trust-remote-code", action="store_true", help="allow code shipped with a checkpoint")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed")
    parser.add_argument("--threads", type=positive_int, help="torch CPU threads (default: half the cores, at least 1)")


def _engine_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--max-gap-tokens", type=positive_int, help="slots for the insertion")
    parser.add_argument("--max-steps", type=positive_int, help="denoising steps at most")
    parser.add_argument("--entropy-bound", type=positive_float, help="entropy accepted per step")
    parser.add_argument("--mode", choices=MODES, default="auto")


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="diffusion-infill", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    commands = parser.add_subparsers(dest="command", required=True)

    complete = commands.add_parser("complete", help="complete at PATH:LINE:COL (1-based, COL in characters)")
    complete.add_argument("location", help=f"PATH:LINE:COL, e.g. {SAMPLE}:10:24")
    complete.add_argument("--json", action="store_true", help="print one JSON object on the last line")
    _engine_options(complete)
    _model_options(complete)
    remote.add_options(complete)

    serve = commands.add_parser("serve", help="run the language server on stdio (or --tcp)")
    serve.add_argument("--tcp", metavar="[HOST:]PORT", help="listen on TCP instead of stdio (default host 127.0.0.1)")
    serve.add_argument("--telemetry", type=Path, help="acceptance counts (default: XDG state dir)")
    _engine_options(serve)
    _model_options(serve)
    remote.add_options(serve)

    fix = commands.add_parser("fix", help="fix a JSON or Markdown file (or a range of it); prints the result")
    fix.add_argument("path", type=Path, help="the file")
    fix.add_argument("--range", metavar="L1:C1-L2:C2", help="only this part (1-based, columns in characters, end "
                     "exclusive)")
    fix.add_argument("--kind", choices=("auto", "json", "jsonc", "markdown", "regenerate"), default="auto",
                     help="what to do (default: by the text and the file's extension)")
    fix.add_argument("--json", action="store_true", help="print one JSON object on the last line")
    fix.add_argument("--write", action="store_true", help="write the fixed text back to the file")
    fix.add_argument("--no-model", action="store_true", help="deterministic repairs only (no diffusion candidates)")
    _model_options(fix)
    remote.add_options(fix)

    train = commands.add_parser("train", help="train the embedded model, or the autoregressive baseline (resumable)")
    train.add_argument("--objective", choices=tuple(TRAIN_DEFAULTS), default="diffusion",
                       help="diffusion: the embedded model; fim: the autoregressive fill-in-the-middle baseline")
    train.add_argument("--run-dir", type=Path, help="checkpoints, logs, probes (default: runs/tiny, runs/fim)")
    train.add_argument("--export", type=Path, help="save_pretrained directory (default: engine/model, "
                       "bench/fim_model)")
    train.add_argument("--init-from", type=Path, help="continue from exported weights (fresh optimizer; steps "
                       "and CPU hours count on from their recipe.json)")
    train.add_argument("--max-steps", type=positive_int, default=10**9, help="stop at this optimizer step")
    train.add_argument("--max-minutes", type=positive_float, help="stop after this wall time")
    train.add_argument("--max-cpu-hours", type=positive_float,
                       help="stop when training has used this much CPU time in all")
    train.add_argument("--cooldown-hours", type=non_negative_float, help="with --max-cpu-hours: the learning rate "
                       "falls linearly to a tenth over the last this many CPU hours")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--noise", choices=("mask", "uniform"), default="mask")
    train.add_argument("--threads", type=positive_int, help="torch CPU threads (default: torch's choice)")
    train.add_argument("--precision", choices=("fp32", "bf16"), default="fp32",
                       help="bf16: matmuls in bfloat16 under autocast (weights stay float32)")
    train.add_argument("--max-prefix", type=positive_int, default=128, help="prefix tokens the model sees "
                       "(training and inference; batches draw a quarter, half or all of it)")
    train.add_argument("--ar-first-hours", type=non_negative_float, default=0.0, help="diffusion: CPU hours of "
                       "the encoder's autoregressive loss alone before the joint loss")
    train.add_argument("--after-end", choices=("ignore", "pad"), default="ignore",
                       help="diffusion: gap slots after END out of the loss, or PAD targets")
    train.add_argument("--shape", type=shape, default=(4, 256), metavar="LAYERSxWIDTH",
                       help="diffusion: a new model's layers and width (default 4x256; heads 64 wide)")
    bench = commands.add_parser("bench", help="the diffusion engine beside the autoregressive baseline, held-out cases")
    add_bench_arguments(bench)
    return parser


def _bench(args: argparse.Namespace) -> int:
    from bench.compare import main as bench_main
    from engine.baseline.autoregressive import SPEC_FILE

    if not (args.baseline / SPEC_FILE).is_file():
        raise CliError(f"no autoregressive baseline at {args.baseline} (missing {SPEC_FILE}); train one with "
                       "`diffusion-infill train --objective fim`")
    return bench_main(args)  # limits torch threads itself, as the server does


def _start_torch(args: argparse.Namespace) -> None:
    """Imports torch (once the input is checked), seeds it and limits its threads as the server does."""
    import torch

    from engine.settings import default_threads

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads or default_threads())


def _load(args: argparse.Namespace) -> LoadedModel:
    """The --model checkpoint on --device; a failure is one line naming what was tried."""
    from engine.loading import ModelLoadError, load

    try:
        return load(args.model, args.device, args.dtype, trust_remote_code=args.trust_remote_code)
    except ModelLoadError as error:
        raise CliError(str(error)) from None


def _complete(args: argparse.Namespace) -> int:
    from cli.complete import Location, run

    location = Location.parse(args.location)
    text = read_text(location.path)
    location.split(text)  # the position is checked before the model loads
    _start_torch(args)
    from engine.factory import create_engine
    from engine.settings import EngineSettings

    settings = EngineSettings(mode=args.mode).with_overrides(
        max_gap_tokens=args.max_gap_tokens, max_steps=args.max_steps, entropy_bound=args.entropy_bound)
    server = remote.remote_settings(args)
    engine = remote.connect(server, settings, args.seed) if server else create_engine(_load(args), settings)
    return run(engine, location, text, args.json)


def _fix(args: argparse.Namespace) -> int:
    text = read_text(args.path)
    _start_torch(args)
    from cli.fix import Selection, run
    from engine.remote.client import RemoteRepairer
    from engine.repair.diffusion import DiffusionRepairer, RepairSettings
    from engine.repair.fixes import Fixer
    from engine.settings import EngineSettings

    selection = Selection.parse(args.range, text)
    server = None if args.no_model else remote.remote_settings(args)
    if server is not None:
        return run(Fixer(RemoteRepairer(remote.connect(server, EngineSettings(), args.seed)), ""), args.path, text,
                   selection, args.kind, args.json, args.write, ranged=args.range is not None)
    loaded = None if args.no_model else _load(args)
    canvas = loaded is not None and loaded.spec is not None  # an instruction checkpoint: deterministic repairs only
    repairer = DiffusionRepairer(loaded, RepairSettings(seed=args.seed)) if canvas else None
    unavailable = "--no-model was given" if loaded is None else f"{loaded.source} was not trained on the infill canvas"
    return run(Fixer(repairer, unavailable), args.path, text, selection, args.kind, args.json, args.write,
               ranged=args.range is not None)


def _tcp_address(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not port.isdigit():
        raise CliError(f"--tcp expects [HOST:]PORT, got {value!r}")
    return host or "127.0.0.1", int(port)


def _serve(args: argparse.Namespace) -> int:
    address = _tcp_address(args.tcp) if args.tcp else None
    remote.remote_settings(args)  # checked here; the server connects itself
    _start_torch(args)
    from lsp.server import ServeOptions, create_server
    from lsp.settings import ServerSettings
    from lsp.telemetry import default_path

    settings = ServerSettings(model=args.model, device=args.device, dtype=args.dtype, mode=args.mode,
                              max_gap_tokens=args.max_gap_tokens, max_steps=args.max_steps,
                              entropy_bound=args.entropy_bound, engine=args.engine, url=args.url,
                              prompt_format=args.prompt_format, timeout=args.timeout,
                              invoked_timeout=args.invoked_timeout)
    server = create_server(ServeOptions(settings, args.telemetry or default_path(), args.trust_remote_code))
    if address is None:
        server.start_io()
    else:
        server.start_tcp(*address)
    return 0


def _train(args: argparse.Namespace) -> int:
    import torch

    from engine.tiny import TinyArchitecture
    from engine.training.fim import FIM_ARCHITECTURE
    from engine.training.objective import ObjectiveConfig
    from engine.training.train import FimTrainer, TrainConfig, Trainer, TrainingSetupError

    if args.threads:
        torch.set_num_threads(args.threads)
    run_dir, export = TRAIN_DEFAULTS[args.objective]
    p = args.max_prefix
    recipe = dict(seed=args.seed, precision=args.precision, max_prefix=p,
                  objective=ObjectiveConfig(prefix_lengths=(p // 4, p // 2, p, p), after_end=args.after_end))
    try:
        if args.objective == "fim":
            config = TrainConfig(objective_kind="fim", architecture=FIM_ARCHITECTURE, **recipe)
            trainer = FimTrainer(config, args.run_dir or run_dir, args.export or export, args.init_from)
        else:
            config = TrainConfig(noise=args.noise, ar_first_hours=args.ar_first_hours,
                                 architecture=TinyArchitecture.of_shape(*args.shape), **recipe)
            trainer = Trainer(config, args.run_dir or run_dir, args.export or export, args.init_from)
        trainer.train(args.max_steps, args.max_minutes, args.max_cpu_hours, args.cooldown_hours)
    except TrainingSetupError as error:
        raise CliError(str(error)) from None
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
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
