"""diffusion-infill: inline infilling with a text-diffusion model, as a language server (serve) and on the
command line (complete, fix), with its training and benchmark."""

# Arguments are parsed and input is checked before torch and transformers are imported
# (seconds on a loaded machine): only the command handlers import them, after the checks,
# and torch alone first, to ask about the GPU, before the model stack. Each command's module
# owns its options (add_arguments) and runs it (main); only the module of the command given
# is imported, so `serve` never imports the benchmark.

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from importlib.metadata import version
from pathlib import Path

from diffusion_infill.cli.inputs import CliError, Parser
from diffusion_infill.engine.remote.errors import RemoteError

SAMPLE = Path(__file__).parent / "samples" / "shapes.py"
COMMANDS = {  # name: (the module that owns its options and runs it, its one-line help)
    "complete": ("complete", "complete at PATH:LINE:COL (1-based, COL in characters)"),
    "serve": ("serve", "run the language server on stdio (or --tcp)"),
    "fix": ("fix", "fix a JSON or Markdown file (or a range of it); prints the result"),
    "train": ("train", "train the embedded model, or the autoregressive baseline (resumable)"),
    "bench": ("bench", "the diffusion engine beside the autoregressive baseline, held-out cases"),
}


def _module(command: str):
    return importlib.import_module(f"diffusion_infill.cli.{COMMANDS[command][0]}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Every command's options, or with `only` just that command's (the others are named, for the help)."""
    parser = Parser(prog="diffusion-infill", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version('diffusion-infill')}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, (_, summary) in COMMANDS.items():
        command = commands.add_parser(name, help=summary)
        if only is None or only == name:
            _module(name).add_arguments(command)
    return parser


def _command_in(argv: list[str]) -> str:
    """The command `argv` names (its first word that is one); "" for none."""
    return next((word for word in argv if word in COMMANDS), "")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(_command_in(argv)).parse_args(argv)
    # The server's stderr is read by editors as errors (Neovim's lsp.log files every line as [ERROR]):
    # it says only what went wrong unless asked (-v: everything, pygls's message bodies too).
    quiet = logging.WARNING if args.command == "serve" else logging.INFO
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else quiet,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    if not args.verbose:
        logging.getLogger("transformers").setLevel(logging.ERROR)
    try:
        return _module(args.command).main(args)
    except (CliError, RemoteError) as error:  # bad input, or a remote engine's server failing: one line, exit 2
        print(f"diffusion-infill: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
