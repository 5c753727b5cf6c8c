"""The Node packages the benchmarks judge against (markdownlint, jsonrepair), each installed from
its lock file in its own folder under src/diffusion_infill/bench/ by `npm ci`; install.sh does that where npm is."""

from __future__ import annotations

import shutil
from pathlib import Path

JSONREPAIR = Path(__file__).parent / "jsonrepair"  # its script, repair.mjs, and node_modules


def node_for(folder: Path, package: str) -> str | None:
    """The `node` to run `folder`'s script with, or None when Node or the package is missing."""
    node = shutil.which("node")
    return node if node is not None and (folder / "node_modules" / package).is_dir() else None
