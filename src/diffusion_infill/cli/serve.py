"""`diffusion-infill serve`: the language server on stdio (or --tcp), its options checked first."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from diffusion_infill.cli import remote
from diffusion_infill.cli.inputs import check_listen, tcp_address
from diffusion_infill.cli.models import add_engine_options, add_model_options, check_device, check_model


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
        "--telemetry",
        type=Path,
        metavar="FILE",
        help="acceptance counts (default: $XDG_STATE_HOME/diffusion-infill/acceptance.json)",
    )
    add_engine_options(parser)
    add_model_options(parser)
    remote.add_options(parser)


def main(args: argparse.Namespace) -> int:
    address = tcp_address(args.tcp) if args.tcp else None
    remote.remote_settings(args)  # checked here; the server connects itself
    # The command line's model and device are checked as `complete` and `fix` check them: a typo
    # is one line here, not a message in an editor. One that an editor's settings choose later is
    # reported there, and the diagnostics and deterministic fixes work without a model.
    check_model(args)
    if address is not None:
        check_listen(*address)
    check_device(args)  # a GPU is asked of torch; the model stack is the engine thread's to import (lsp.worker)
    from diffusion_infill.engine.remote.settings import Credentials
    from diffusion_infill.lsp.server import ServeOptions, create_server
    from diffusion_infill.lsp.settings import ServerSettings
    from diffusion_infill.lsp.telemetry import default_path
    from diffusion_infill.lsp.worker import TorchStart

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
    server = create_server(
        ServeOptions(
            settings,
            args.telemetry or default_path(),
            args.trust_remote_code,
            credentials,
            TorchStart(args.seed, args.threads),
        )
    )
    if address is None:
        server.start_io()
    else:
        # pygls says where it listens at INFO ("Serving on (host, port)"): with --tcp 0 that line is
        # the only way to learn the port, and no editor files this stderr as errors.
        logging.getLogger("pygls.server").setLevel(logging.INFO)
        server.start_tcp(*address)
    return 0
