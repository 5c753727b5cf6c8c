"""Acceptance counts, kept in a local JSON file so the acceptance rate can be measured.

Counts only: no text, no file names, nothing leaves the machine. Each returned item
carries a command that the client runs when the user accepts it; the command lands here.

Counting is in memory; the file is written by a thread of its own (a lock file, a read, a write,
a rename, and a wait of up to 200 ms while another server holds the lock), never on the event
loop that answers keystrokes. Counts that arrive while it writes are written next, together.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lsprotocol.types import Command

ACCEPT_COMMAND = "diffusionInfill.accept"
log = logging.getLogger(__name__)


def default_path() -> Path:
    """Where counts live unless `serve --telemetry` says otherwise (XDG state directory)."""
    state = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(state) / "diffusion-infill" / "acceptance.json"


@dataclass
class Counts:
    requests: int = 0  # inline completion requests answered with at least one item
    items: int = 0  # items offered in those answers
    accepted: int = 0  # items the user accepted
    by_trigger: dict[str, dict[str, int]] = field(default_factory=dict)  # "invoked"/"automatic" -> the three above

    def add(self, trigger: str, name: str, amount: int) -> None:
        setattr(self, name, getattr(self, name) + amount)
        per_trigger = self.by_trigger.setdefault(trigger, {"requests": 0, "items": 0, "accepted": 0})
        per_trigger[name] = per_trigger.get(name, 0) + amount

    def plus(self, other: Counts) -> Counts:
        total = Counts(**json.loads(json.dumps(asdict(self))))  # a deep copy
        for trigger, counts in other.by_trigger.items():
            for name, amount in counts.items():
                total.add(trigger, name, amount)
        return total


class Telemetry:
    """Counts offered and accepted completions. Every change is added to the file's counts, not
    written over them: each editor window runs its own server on the same file."""

    def __init__(self, path: Path | None):
        self.path = path  # None: count in memory only
        self.counts = self._read()  # the file's counts as of the last save, with this server's since
        self.unsaved = Counts()  # this server's changes the file does not have yet
        self._lock = threading.Lock()  # `counts` and `unsaved`: counted on the loop, saved by the writer
        self._changed = threading.Event()  # unsaved changes wait for the writer
        self._saving = threading.Lock()  # one save at a time: `flush` waits for the writer's
        if path is not None:  # a daemon: unsaved counts never keep the process from exiting (`flush` first)
            threading.Thread(target=self._write, name="telemetry", daemon=True).start()

    def _read(self) -> Counts:
        if self.path is None or not self.path.exists():
            return Counts()
        try:
            return Counts(**json.loads(self.path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError) as error:
            log.warning("ignoring unreadable acceptance counts in %s: %s", self.path, error)
            return Counts()

    def _bump(self, trigger: str, name: str, amount: int) -> None:
        with self._lock:
            self.counts.add(trigger, name, amount)
            self.unsaved.add(trigger, name, amount)
        self._changed.set()

    def offered(self, trigger: str, items: int) -> None:
        if items:
            self._bump(trigger, "requests", 1)
            self._bump(trigger, "items", items)

    def accepted(self, trigger: str) -> None:
        self._bump(trigger, "accepted", 1)

    def flush(self, tries: int = 5) -> None:
        """Saves the unsaved changes now, on the calling thread (the shutdown, tests), waiting out another
        server's save up to `tries` times."""
        for _ in range(tries):
            self._save()
            with self._lock:
                if self.unsaved == Counts():
                    return

    def _write(self) -> None:
        while True:
            self._changed.wait()
            self._changed.clear()
            self._save()

    def _save(self) -> None:
        """Adds the unsaved changes to the file's counts; if another server holds the file, they wait
        for the next change."""
        if self.path is None:
            return
        with self._saving:
            with self._lock:
                saving, self.unsaved = self.unsaved, Counts()
            if saving == Counts():
                return
            merged = self._saved(saving)
            with self._lock:
                if merged is None:  # kept for the next save
                    self.unsaved = saving.plus(self.unsaved)
                else:  # what the file says now, with what was counted while it was written
                    self.counts = merged.plus(self.unsaved)

    def _saved(self, saving: Counts) -> Counts | None:
        """The file's counts plus `saving`, written to it; None when it could not be."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with _Lock(self.path.with_name(self.path.name + ".lock")) as locked:
                if not locked:
                    return None
                merged = self._read().plus(saving)
                # Written aside and renamed, so a reader never sees half a file.
                temporary = self.path.with_name(self.path.name + ".tmp")
                temporary.write_text(json.dumps(asdict(merged), indent=1), encoding="utf-8")
                temporary.replace(self.path)
        except OSError as error:
            log.warning("could not save acceptance counts to %s: %s", self.path, error)
            return None
        return merged


class _Lock:
    """A lock file made with O_EXCL (portable, unlike fcntl): held for one read-add-write, so a
    lock older than STALE_S was left by a server that died holding it."""

    WAIT_S, POLL_S, STALE_S = 0.2, 0.005, 10.0

    def __init__(self, path: Path):
        self.path = path
        self.held = False

    def __enter__(self) -> bool:
        deadline = time.monotonic() + self.WAIT_S
        while True:
            try:
                os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                self.held = True
                return True
            except FileExistsError:
                self._break_if_stale()
            if time.monotonic() > deadline:
                return False
            time.sleep(self.POLL_S)  # held for a read and a write: microseconds

    def _break_if_stale(self) -> None:
        try:
            if time.time() - self.path.stat().st_mtime > self.STALE_S:
                self.path.unlink()
        except FileNotFoundError:
            pass

    def __exit__(self, *exc) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)


def accept_command(trigger: str) -> Command:
    """The command an item carries; the client runs it on accept."""
    return Command(title="diffusion-infill: completion accepted", command=ACCEPT_COMMAND, arguments=[trigger])
