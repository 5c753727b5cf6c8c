"""A process's children and whether a process still runs, read from Linux's /proc (no psutil)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

WORKER = "spawn_main"  # in the command line of a multiprocessing "spawn" child: the diagnostics or repairs process


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first); None once the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(")") + 2 :].split()


def children(pid: int) -> dict[int, str]:
    """The processes whose parent is `pid`, with their command lines."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None and int(stat[1]) == pid:
            try:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except (FileNotFoundError, ProcessLookupError):
                continue
    return found


def workers(pid: int) -> set[int]:
    """`pid`'s diagnostics and repairs processes."""
    return {child for child, command in children(pid).items() if WORKER in command}


def running(pid: int) -> bool:
    """False once the process has ended (a zombie has ended: it only waits to be reaped)."""
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


async def appears(find, seconds: float):
    """`find()` once it is truthy, asked every 10 ms for at most `seconds`; what it last gave otherwise."""
    deadline = time.monotonic() + seconds
    while not (found := find()) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    return found
