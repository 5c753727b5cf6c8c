"""Acceptance counts, kept in a local JSON file so the acceptance rate can be measured.

Counts only: no text, no file names, nothing leaves the machine. Each returned item
carries a command that the client runs when the user accepts it; the command lands here.
"""

from __future__ import annotations

import json
import logging
import os
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


class Telemetry:
    """Counts offered and accepted completions; saves them after every change."""

    def __init__(self, path: Path | None):
        self.path = path  # None: count in memory only
        self.counts = self._read()

    def _read(self) -> Counts:
        if self.path is None or not self.path.exists():
            return Counts()
        try:
            return Counts(**json.loads(self.path.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError) as error:
            log.warning("ignoring unreadable acceptance counts in %s: %s", self.path, error)
            return Counts()

    def _bump(self, trigger: str, name: str, amount: int) -> None:
        setattr(self.counts, name, getattr(self.counts, name) + amount)
        per_trigger = self.counts.by_trigger.setdefault(trigger, {"requests": 0, "items": 0, "accepted": 0})
        per_trigger[name] = per_trigger.get(name, 0) + amount

    def offered(self, trigger: str, items: int) -> None:
        if items:
            self._bump(trigger, "requests", 1)
            self._bump(trigger, "items", items)
            self._save()

    def accepted(self, trigger: str) -> None:
        self._bump(trigger, "accepted", 1)
        self._save()

    def _save(self) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Written aside and renamed, so a reader never sees half a file.
            temporary = self.path.with_suffix(".tmp")
            temporary.write_text(json.dumps(asdict(self.counts), indent=1), encoding="utf-8")
            temporary.replace(self.path)
        except OSError as error:
            log.warning("could not save acceptance counts to %s: %s", self.path, error)


def accept_command(trigger: str) -> Command:
    """The command an item carries; the client runs it on accept."""
    return Command(title="diffusion-infill: completion accepted", command=ACCEPT_COMMAND, arguments=[trigger])
