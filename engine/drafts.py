"""What a completion is asked with and what it yields, whichever engine computes it."""

from __future__ import annotations

from dataclasses import dataclass

MODES = ("auto", "single-line", "multi-line")  # how many lines an insertion may span (EngineSettings.mode)


@dataclass(frozen=True)
class InfillRequest:
    prefix: str  # document text before the cursor
    suffix: str  # document text after the cursor
    language: str | None = None  # closure-check grammar ("python", "json", ...), None: brackets only


@dataclass(frozen=True)
class Draft:
    text: str  # the insertion as it stands
    step: int  # decoder forward passes so far
    mean_entropy: float
    final: bool
    valid: bool | None = None  # closure check, known for the final draft
    prefill_ms: float = 0.0  # time spent encoding the prefix for this request
