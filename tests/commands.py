"""The command lines tests start: the CLI as a module of this checkout's interpreter."""

from __future__ import annotations

import sys
from pathlib import Path

CLI = [sys.executable, "-m", "diffusion_infill.cli.main"]


def serve_command(model: Path | str | None, telemetry: Path, *extra: str, verbose: bool = False) -> list[str]:
    """`diffusion-infill [-v] serve` with `model` (None: the server's default) and a telemetry file."""
    command = [*CLI, *(["-v"] if verbose else []), "serve", "--telemetry", str(telemetry)]
    return command + (["--model", str(model)] if model is not None else []) + list(extra)
