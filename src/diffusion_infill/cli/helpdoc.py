"""docs/cli.md's option lists are the commands' own `--help`, so the page cannot drift from the parser.

Each list sits between a `<!-- diffusion-infill ... --help -->` line and the end of the fenced block
after it; `python -m diffusion_infill.cli.helpdoc` writes them again, and tests/cli/test_helpdoc.py fails when the
page differs from what it would write.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from collections.abc import Iterator
from pathlib import Path

from diffusion_infill.cli.main import build_parser

PAGE = Path(__file__).resolve().parents[3] / "docs" / "cli.md"
WIDTH = 100  # columns the help is wrapped to on the page, whatever the terminal
_BLOCK = re.compile(r"^<!-- diffusion-infill (?P<command>[\w ]*?) ?--help -->\n```text\n.*?^```\n", re.M | re.S)


@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    """argparse wraps to $COLUMNS (else the terminal's width)."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


def help_text(command: str) -> str:
    """What `diffusion-infill [COMMAND] --help` prints, at WIDTH columns."""
    out = io.StringIO()
    with _columns(WIDTH), contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        build_parser().parse_args([*command.split(), "--help"])
    return out.getvalue()


def render(page: str) -> str:
    """`page` with every help block written from the parser."""

    def block(match: re.Match) -> str:
        command = match["command"]
        marker = f"diffusion-infill {command} --help" if command else "diffusion-infill --help"
        return f"<!-- {marker} -->\n```text\n{help_text(command)}```\n"

    return _BLOCK.sub(block, page)


def commands(page: str) -> list[str]:
    """The commands whose help the page shows ("" for the top level)."""
    return [match["command"] for match in _BLOCK.finditer(page)]


if __name__ == "__main__":
    PAGE.write_text(render(PAGE.read_text()))
