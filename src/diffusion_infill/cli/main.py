"""diffusion-infill: inline infilling with a text-diffusion model, as a language server (serve) and on the
command line (complete, fix), with its training and benchmark."""

# Arguments are parsed and input is checked before torch and transformers are imported
# (seconds on a loaded machine): only the command handlers import them, after the checks,
# and torch alone first, to ask about the GPU, before the model stack.

from __future__ import annotations

import argparse
import logging
import sys
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

from diffusion_infill.bench.compare import add_arguments as add_bench_arguments
from diffusion_infill.cli import remote
from diffusion_infill.cli import train as training
from diffusion_infill.cli.inputs import (
    CliError,
    Parser,
    check_listen,
    device_name,
    dtype_name,
    positive_float,
    positive_int,
    probability,
    read_text,
    tcp_address,
)
from diffusion_infill.engine.checkpoint import ModelLoadError, model_problem
from diffusion_infill.engine.drafts import MODES

if TYPE_CHECKING:
    from diffusion_infill.engine.loading import LoadedModel

SAMPLE = Path(__file__).parent / "samples" / "shapes.py"


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", metavar="DIR_OR_ID", help="checkpoint directory, or hub id in the local hub cache "
                        "(default: the embedded model, engine/model); with --engine openai: the served model's name")
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
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('diffusion-infill')}")
    commands = parser.add_subparsers(dest="command", required=True)

    complete = commands.add_parser("complete", help="complete at PATH:LINE:COL (1-based, COL in characters)")
    complete.add_argument("location", help="PATH:LINE:COL, e.g. src/diffusion_infill/cli/samples/shapes.py:11:37")
    complete.add_argument("--json", action="store_true", help="print one JSON object on the last line")
    complete.add_argument("--min-confidence", type=probability, metavar="P",
                          help="print nothing when the completion's estimated chance of being accepted is under P "
                          "(the server's minConfidence; default: always print, and --json's `shown` is judged "
                          "at the threshold calibrated with the checkpoint, as the server's default)")
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
    fix.add_argument("--no-model", action="store_true", help="deterministic repairs only (no diffusion candidates)")
    _model_options(fix)
    remote.add_options(fix)

    train = commands.add_parser("train", help="train the embedded model, or the autoregressive baseline (resumable)")
    training.add_arguments(train)
    bench = commands.add_parser("bench", help="the diffusion engine beside the autoregressive baseline, held-out cases")
    add_bench_arguments(bench)
    return parser


def _bench(args: argparse.Namespace) -> int:
    if args.out is not None:
        _need_matplotlib()
    from diffusion_infill.bench.compare import main as bench_main
    from diffusion_infill.engine.baseline.autoregressive import SPEC_FILE

    if not (args.baseline / SPEC_FILE).is_file():
        raise CliError(f"no autoregressive baseline at {args.baseline} (missing {SPEC_FILE}); train one with "
                       "`diffusion-infill train --objective fim`")
    return bench_main(args)  # limits torch threads itself, as the server does


def _need_matplotlib() -> None:
    """--out draws plot.png at the end of a run of minutes: a missing matplotlib is said before it starts."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise CliError("bench --out draws plot.png with matplotlib, which is not installed: "
                       "pip install matplotlib (or install.sh's '.[dev]'), or leave out --out") from None


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


def _fix(args: argparse.Namespace) -> int:
    from diffusion_infill.cli.fix import Selection, pick_kind, run
    from diffusion_infill.engine.repair.fixes import Fixer

    text = read_text(args.path)
    selection = Selection.parse(args.range, text)
    kind = pick_kind(args.kind, args.path, text[selection.start : selection.end])
    ranged = args.range is not None
    if args.no_model:  # the deterministic repairs: no torch, no model stack
        return run(Fixer(None, "--no-model was given"), args.path, text, selection, kind, args.json, args.write,
                   ranged=ranged)
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
    # The command line's model and device are checked as `complete` and `fix` check them: a typo
    # is one line here, not a message in an editor. One that an editor's settings choose later is
    # reported there, and the diagnostics and deterministic fixes work without a model.
    _check_model(args)
    if address is not None:
        check_listen(*address)
    _check_device(args)  # imports torch
    _start_torch(args)
    from diffusion_infill.engine.remote.settings import Credentials
    from diffusion_infill.lsp.server import ServeOptions, create_server
    from diffusion_infill.lsp.settings import ServerSettings
    from diffusion_infill.lsp.telemetry import default_path

    settings = ServerSettings(model=args.model, device=args.device, dtype=args.dtype, mode=args.mode,
                              max_gap_tokens=args.max_gap_tokens, max_steps=args.max_steps,
                              entropy_bound=args.entropy_bound, engine=args.engine, url=args.url,
                              prompt_format=args.prompt_format, timeout=args.timeout,
                              invoked_timeout=args.invoked_timeout)
    credentials = Credentials.from_environment(args.url)
    server = create_server(ServeOptions(settings, args.telemetry or default_path(), args.trust_remote_code,
                                        credentials))
    if address is None:
        server.start_io()
    else:
        # pygls says where it listens at INFO ("Serving on (host, port)"): with --tcp 0 that line is
        # the only way to learn the port, and no editor files this stderr as errors.
        logging.getLogger("pygls.server").setLevel(logging.INFO)
        server.start_tcp(*address)
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
    handlers = {"complete": _complete, "serve": _serve, "train": training.run, "fix": _fix, "bench": _bench}
    try:
        return handlers[args.command](args)
    except CliError as error:  # bad input: one line, exit 2
        print(f"diffusion-infill: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
