"""`diffusion-infill serve`: the language server on stdio (or --tcp), its options checked first."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from diffusion_infill.cli import remote
from diffusion_infill.cli.inputs import CliError, check_listen, is_loopback, positive_float, tcp_address
from diffusion_infill.cli.models import add_engine_options, add_model_options, check_device, check_model
from diffusion_infill.lsp.diagnostics.process import WORKER_TIMEOUT_S


def add_arguments(parser: argparse.ArgumentParser) -> None:
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument(
        "--stdio", action="store_true", help="speak on stdin and stdout (the default; what LSP clients pass)"
    )
    transport.add_argument(
        "--tcp",
        metavar="[HOST:]PORT",
        help="listen on TCP instead of stdio (default host 127.0.0.1; port 0: any free one)",
    )
    parser.add_argument(
        "--allow-remote",
        action="store_true",
        help="let --tcp listen on an address other machines can reach (no authentication: see docs/cli.md)",
    )
    parser.add_argument(
        "--telemetry",
        type=Path,
        metavar="FILE",
        help="acceptance counts (default: $XDG_STATE_HOME/diffusion-infill/acceptance.json)",
    )
    parser.add_argument(
        "--worker-timeout",
        type=positive_float,
        default=WORKER_TIMEOUT_S,
        metavar="SECONDS",
        help="seconds a Fix JSON / Fix Markdown repair or a document's diagnostics may take in their worker "
        "process, its start-up not counted; past it the worker is replaced (default: %(default)g)",
    )
    add_engine_options(parser)
    add_model_options(parser)
    remote.add_options(parser)


def exposure(host: str, args: argparse.Namespace) -> str | None:
    """The server has no authentication: an address other machines reach needs --allow-remote, and
    then the user is told what anyone who connects gets (the line returned); None for loopback."""
    if is_loopback(host):
        return None
    if not args.allow_remote:
        raise CliError(
            f"--tcp {host}: other machines could connect, and the server has no authentication; "
            "pass --allow-remote to listen there anyway, or use 127.0.0.1"
        )
    spent = f"; requests spend the API key sent to {args.url}" if args.engine == "openai" else ""
    return (
        f"diffusion-infill serve: listening on {host} without authentication: anyone who can reach it "
        f"can send it code, read the completions and fixes, and change its settings (the model, the engine){spent}"
    )


def main(args: argparse.Namespace) -> int:
    address = tcp_address(args.tcp) if args.tcp else None
    remote.remote_settings(args)  # checked here; the server connects itself
    # The command line's model and device are checked as `complete` and `fix` check them: a typo
    # is one line here, not a message in an editor. One that an editor's settings choose later is
    # reported there, and the diagnostics and deterministic fixes work without a model.
    check_model(args)
    if address is not None:
        exposed = exposure(address[0], args)
        check_listen(*address)
        if exposed:
            print(exposed, file=sys.stderr)
    # a GPU is asked of torch; the model stack is the engine thread's to import (lsp.completion.worker)
    check_device(args)
    from diffusion_infill.engine.remote.settings import Credentials
    from diffusion_infill.lsp.completion.current_engine import TorchStart
    from diffusion_infill.lsp.completion.telemetry import default_path
    from diffusion_infill.lsp.server import ServeOptions, create_server, end_session
    from diffusion_infill.lsp.settings import ServerSettings
    from diffusion_infill.lsp.transport import tcp

    settings = ServerSettings(
        model=args.model,
        device=args.device,
        dtype=args.dtype,
        quantize=args.quantize,
        mode=args.mode,
        max_gap_tokens=args.max_gap_tokens,
        max_steps=args.max_steps,
        entropy_bound=args.entropy_bound,
        engine=args.engine,
        url=args.url,
        prompt_format=args.prompt_format,
        timeout=args.timeout,
        invoked_timeout=args.invoked_timeout,
    )
    credentials = Credentials.from_environment(args.url)
    options = ServeOptions(
        settings,
        args.telemetry or default_path(),
        args.trust_remote_code,
        credentials,
        TorchStart(args.seed, args.threads),
        args.worker_timeout,
    )
    if address is None:
        create_server(options).start_io()
    else:
        # the listener says where it listens at INFO ("Serving on (host, port)"): with --tcp 0 that line is
        # the only way to learn the port, and no editor files this stderr as errors.
        logging.getLogger(tcp.__name__).setLevel(logging.INFO)
        tcp.Listener(lambda: create_server(options), end_session).serve(*address)
    return 0
