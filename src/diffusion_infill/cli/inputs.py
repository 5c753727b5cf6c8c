"""What the user hands the command: files read as UTF-8 text, numbers checked by argparse.

Bad input is a CliError, which `diffusion_infill.cli.main` prints as one line on stderr with exit status 2.
Nothing here imports torch, so these checks answer before the model libraries load.
"""

from __future__ import annotations

import argparse
import ipaddress
import socket
from collections.abc import Callable
from pathlib import Path

from diffusion_infill.engine.checkpoint import device_problem, dtype_problem


class CliError(Exception):
    """Bad input: the message is the one line the user sees."""


def read_text(path: Path, exact: bool = False) -> str:
    """The file's text; a missing, unreadable or non-UTF-8 file is a CliError. `exact`: line endings as
    written (CRLF, a lone carriage return), not translated to line feeds, so that a fix writes them back."""
    try:
        with path.open(encoding="utf-8", newline="" if exact else None) as file:
            return file.read()
    except UnicodeDecodeError as error:
        raise CliError(
            f"{path} is not UTF-8 text (byte {error.start} is 0x{error.object[error.start]:02x}); "
            "only UTF-8 files can be completed or fixed"
        ) from None
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


def probability(text: str) -> float:
    return _number(text, float, lambda value: 0 <= value <= 1, "a number from 0 to 1")


def device_name(text: str) -> str:
    """A device name the engine runs on; whether torch sees that GPU is asked later, once torch loads."""
    if problem := device_problem(text):
        raise argparse.ArgumentTypeError(problem)
    return text


def dtype_name(text: str) -> str:
    if problem := dtype_problem(text):
        raise argparse.ArgumentTypeError(problem)
    return text


def plural(count: int, noun: str) -> str:
    """`1 line`, `2 lines`: for the messages that count."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def tcp_address(value: str) -> tuple[str, int]:
    """[HOST:]PORT (host 127.0.0.1 unless given; an IPv6 host in brackets), its port in range."""
    host, _, port = value.rpartition(":")
    if not port.isdigit():
        raise CliError(f"--tcp expects [HOST:]PORT, got {value!r}")
    if int(port) > 65535:
        raise CliError(f"--tcp {value}: port {port} is out of range (0 to 65535)")
    return host.removeprefix("[").removesuffix("]") or "127.0.0.1", int(port)


def check_listen(host: str, port: int) -> None:
    """Binds HOST:PORT and lets it go again, so that an address in use, or one this machine does not
    have, is one line before torch loads (the server binds it again, as pygls does)."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as asyncio's server will
            probe.bind((host, port))
            probe.listen()
    except OSError as error:  # socket.gaierror (a host that does not resolve) included
        raise CliError(f"--tcp: cannot listen on {host}:{port}: {error.strerror or error}") from None


def is_loopback(host: str) -> bool:
    """Whether every address HOST names is this machine's loopback (127.0.0.0/8, ::1), so that no
    other machine can connect; a host that does not resolve is not (check_listen then says why)."""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM)}
    except OSError:
        return False
    return all(ipaddress.ip_address(address.partition("%")[0]).is_loopback for address in addresses)


class Parser(argparse.ArgumentParser):
    """argparse with its errors as one line (prog: message) and exit status 2, without the usage block."""

    def error(self, message: str):
        unrecognized = message.partition("unrecognized arguments:")[2].split()
        if {"-v", "--verbose"} & set(unrecognized):
            message += f"; -v goes before the command: {self.prog} -v COMMAND ..."
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")
