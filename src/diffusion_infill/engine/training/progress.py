"""What a training run says while it runs, as people expect of a long job: a line as each stage of
its setup begins (reading the corpus, tokenizing ...), then once steps run a line every few
seconds: the step, the loss, tokens a second, and the time left when the run is bounded.

`say` is where the lines go (the command line's stderr); the trainer knows nothing of terminals.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

EVERY_S = 5.0  # seconds between two progress lines (the first step gets one at once)
UNBOUNDED_STEPS = 10**9  # --max-steps when not given: the run is bounded by time, or not at all


def silent(line: str) -> None:
    """A `say` that says nothing (library use, tests of the loop)."""


@dataclass(frozen=True)
class Bounds:
    """Where a run stops, for the time left: None where it has no such bound."""

    max_steps: int | None = None
    deadline: float | None = None  # time.time() when the wall-time budget ends
    cpu_budget: float | None = None  # CPU seconds in all


def duration(seconds: float) -> str:
    """`45s`, `3m05s`, `2h07m`."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class StepReport:
    """Counts steps and tokens; says a line after the first step and then every `every_s` seconds."""

    def __init__(
        self,
        say: Callable[[str], None],
        bounds: Bounds,
        cpu_began: float = 0.0,
        every_s: float = EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.say, self.bounds, self.every_s, self.clock = say, bounds, every_s, clock
        self.began, self.cpu_began = clock(), cpu_began  # CPU seconds in all when this process began
        self.steps = 0  # steps of this process, for the pace
        self.last: tuple[float, int] | None = None  # (when, tokens counted) at the last line
        self.tokens = 0

    def step(self, step: int, loss: Callable[[], float], tokens: int, cpu_seconds: float) -> None:
        """One optimizer step done: `step` in all, `loss()` its loss (read only when a line is said:
        on a GPU reading it waits for the step), `tokens` the batch's."""
        self.steps += 1
        self.tokens += tokens
        now = self.clock()
        if self.last is not None and now - self.last[0] < self.every_s:
            return
        since, counted = self.last or (self.began, 0)
        rate = (self.tokens - counted) / max(now - since, 1e-9)
        parts = [f"step {step:,}" + (f"/{self.bounds.max_steps:,}" if self.bounds.max_steps else "")]
        parts += [f"loss {loss():.4f}", f"{rate:,.0f} tokens/s"]
        if (left := self.left(step, now, cpu_seconds)) is not None:
            parts.append(f"{duration(left)} left")
        self.say("train: " + " · ".join(parts))
        self.last = (now, self.tokens)

    def left(self, step: int, now: float, cpu_seconds: float) -> float | None:
        """Seconds until the nearest bound, at this process's pace so far; None for an unbounded run."""
        estimates = []
        pace = (now - self.began) / self.steps
        if self.bounds.max_steps:
            estimates.append((self.bounds.max_steps - step) * pace)
        if self.bounds.deadline is not None:
            estimates.append(self.bounds.deadline - time.time())
        spent = cpu_seconds - self.cpu_began
        if self.bounds.cpu_budget is not None and spent > 0:
            # CPU seconds go at the rate they went so far in this process
            estimates.append((self.bounds.cpu_budget - cpu_seconds) * (now - self.began) / spent)
        return min(estimates) if estimates else None
