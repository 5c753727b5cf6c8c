"""What the user hands the command: files read as UTF-8 text, numbers checked by argparse.

Bad input is a CliError, which `cli.main` prints as one line on stderr with exit status 2.
Nothing here imports torch, so these checks answer before the model libraries load.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path


class CliError(Exception):
    """Bad input: the message is the one line the user sees."""


def read_text(path: Path) -> str:
    """The file's text; a missing, unreadable or non-UTF-8 file is a CliError."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise CliError(f"{path} is not UTF-8 text (byte {error.start} is 0x{error.object[error.start]:02x}); "
                       "only UTF-8 files can be completed or fixed") from None
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror or error}") from None


def _number(text: str, parse: Callable[[str], float], accept: Callable[[float], bool], expected: str):
    """`text` parsed, when `accept` takes it (comparisons with nan are false, so nan never passes)."""
    try:
        value = parse(text)
    except ValueError:
        value = None
    if value is None or not accept(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    return _number(text, int, lambda value: value >= 1, "a positive integer")


def non_negative_int(text: str) -> int:
    return _number(text, int, lambda value: value >= 0, "an integer of 0 or more")


def shape(text: str) -> tuple[int, int]:
    """LAYERSxWIDTH, e.g. 2x384: a width that is a multiple of 64 (the heads are 64 wide)."""
    layers, _, width = text.lower().partition("x")
    if not (layers.isdigit() and width.isdigit() and int(layers) >= 1 and int(width) >= 64 and int(width) % 64 == 0):
        raise argparse.ArgumentTypeError(f"expected LAYERSxWIDTH with a width that is a multiple of 64, got {text!r}")
    return int(layers), int(width)


def positive_float(text: str) -> float:
    return _number(text, float, lambda value: 0 < value < float("inf"), "a positive number")


def non_negative_float(text: str) -> float:
    return _number(text, float, lambda value: 0 <= value < float("inf"), "a number of 0 or more")


class Parser(argparse.ArgumentParser):
    """argparse with its errors as one line (prog: message) and exit status 2, without the usage block."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")
