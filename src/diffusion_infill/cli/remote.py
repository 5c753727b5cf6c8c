"""The command line's side of diffusion_infill.engine.remote.client: `--engine openai --url URL --model NAME` on
complete, fix and serve."""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING

from diffusion_infill.cli.inputs import CliError, positive_float
from diffusion_infill.engine.remote.settings import API_URL_VARIABLE, FORMATS, RemoteSettings, api_key

if TYPE_CHECKING:
    from diffusion_infill.engine.remote.client import RemoteEngine
    from diffusion_infill.engine.settings import EngineSettings

DEFAULTS = RemoteSettings(url="", model="")


class RemoteOptionsError(CliError):
    """--engine openai without what it needs."""


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--engine",
        choices=("local", "openai"),
        default="local",
        help="local: the checkpoint in this process (default); openai: --model served by the "
        "OpenAI-compatible server at --url (vLLM, transformers serve); API key from "
        "$DIFFUSION_INFILL_API_KEY or $OPENAI_API_KEY, sent only to --url (serve: else to "
        f"${API_URL_VARIABLE})",
    )
    parser.add_argument(
        "--url", metavar="URL", help="with --engine openai: the server's base URL, e.g. http://gpu-box:8000/v1"
    )
    parser.add_argument(
        "--prompt-format",
        choices=FORMATS,
        default=DEFAULTS.prompt_format,
        help="with --engine openai: how to ask (default: auto, probed once at start)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=DEFAULTS.timeout,
        metavar="SECONDS",
        help=f"with --engine openai: seconds an as-you-type completion may take (default: {DEFAULTS.timeout:g})",
    )
    parser.add_argument(
        "--invoked-timeout",
        type=positive_float,
        default=DEFAULTS.invoked_timeout,
        metavar="SECONDS",
        help="with --engine openai: seconds for invoked completions, `complete` and `fix` "
        f"(default: {DEFAULTS.invoked_timeout:g})",
    )


def remote_settings(args: argparse.Namespace) -> RemoteSettings | None:
    """The server the arguments name; None for the in-process engine."""
    if args.engine != "openai":
        if args.url:  # else the user's server is silently not asked and the local model answers
            raise RemoteOptionsError("--url needs --engine openai (without it the in-process engine answers)")
        return None
    if not args.url or not args.model:
        raise RemoteOptionsError(
            "--engine openai needs --url (e.g. http://gpu-box:8000/v1) and --model (the served model's name)"
        )
    if not args.verbose:  # the HTTP client logs every request at INFO: one line per keystroke
        for name in ("httpx", "httpx2"):
            logging.getLogger(name).setLevel(logging.WARNING)
    return RemoteSettings(
        args.url,
        args.model,
        args.prompt_format,
        timeout=args.timeout,
        invoked_timeout=args.invoked_timeout,
        api_key=api_key(),
    )  # the command line's URL


def connect(remote: RemoteSettings, settings: EngineSettings, seed: int) -> RemoteEngine:
    """An engine on the server, its prompt format probed; one CLI error line when the server does not answer."""
    from diffusion_infill.engine.remote.client import RemoteEngine, RemoteError

    engine = RemoteEngine(remote, settings, seed)
    try:
        engine.probe()
    except RemoteError as error:
        raise CliError(str(error)) from None
    return engine
