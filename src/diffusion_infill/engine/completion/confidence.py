"""How likely a final completion is to be accepted, from what the engine already has.

A diffusion model knows its uncertainty at every slot: the sampler computes each slot's
distribution at every step, and the probability of the token a slot was revealed with is
kept here (for the autoregressive baseline, each greedy token's probability). With the
completion's length and the kind of position it is asked at, a small logistic model turns
that evidence into an estimate of being accepted. Its coefficients are fitted on tuning
files that are not the reported ones (`python -m diffusion_infill.bench.calibrate`) and saved beside the
checkpoint (`confidence.json`) with the threshold chosen for it; a checkpoint without
them gets no estimate, and the server then gates nothing.

Torch is imported only where tensors are made (the fit, the per-slot record): the server reads a
calibration and gates with it before the model stack is imported.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

CALIBRATION_FILE = "confidence.json"


@dataclass(frozen=True)
class Evidence:
    """What a final completion's estimate is computed from."""

    mean_logprob: float  # mean log-probability of its tokens (END included) when each was chosen
    min_logprob: float  # the least likely of them
    chars: int  # length of the text
    multi_line: bool  # the text spans lines
    at_line_start: bool  # asked on a line holding only indentation
    after_word: bool  # asked right after a letter, digit or underscore
    cut: bool  # the closure check cut the text short (it was the longest valid prefix)


def features(evidence: Evidence) -> dict[str, float]:
    """The logistic model's inputs, by name."""
    return {
        "mean_logprob": evidence.mean_logprob,
        "min_logprob": max(evidence.min_logprob, -10.0),  # a hard floor: one impossible token says enough
        "log_chars": math.log1p(evidence.chars),
        "multi_line": float(evidence.multi_line),
        "at_line_start": float(evidence.at_line_start),
        "after_word": float(evidence.after_word),
        "cut": float(evidence.cut),
    }


def evidence(logprobs: list[float], text: str, prefix: str, cut: bool) -> Evidence:
    """The evidence for `text`, completed at the end of `prefix`, its tokens chosen with `logprobs`."""
    line = prefix.rsplit("\n", 1)[-1]
    last = prefix[-1:]
    scores = logprobs or [0.0]
    return Evidence(
        mean_logprob=sum(scores) / len(scores),
        min_logprob=min(scores),
        chars=len(text),
        multi_line="\n" in text,
        at_line_start=not line.strip(),
        after_word=bool(last) and (last.isalnum() or last == "_"),
        cut=cut,
    )


@dataclass(frozen=True)
class Calibration:
    """A logistic model: P(accepted) = sigmoid(intercept + sum of weight * feature)."""

    weights: dict[str, float]
    intercept: float
    threshold: float = 0.0  # the minConfidence chosen with it: most typing saved per wrong suggestion shown
    fitted_on: str = ""  # what it was fitted on, for the record
    # the quietAfter chosen with it: characters after which no suggestion of this model shown in the
    # tuning replay was accepted (diffusion_infill.lsp.completion.triggers); another model keeps its own
    quiet_after: str = ""

    def estimate(self, found: Evidence) -> float:
        return self.chance(features(found))

    def chance(self, values: dict[str, float]) -> float:
        """The estimate from the features by name."""
        score = self.intercept + sum(weight * values[name] for name, weight in self.weights.items())
        return 1.0 / (1.0 + math.exp(-max(min(score, 40.0), -40.0)))

    def save(self, directory: Path, file: str = CALIBRATION_FILE) -> None:
        (directory / file).write_text(json.dumps(asdict(self), indent=1) + "\n")

    @classmethod
    def load(
        cls, directory: str | Path | None, file: str = CALIBRATION_FILE, names: frozenset[str] | None = None
    ) -> Calibration | None:
        """The checkpoint's calibration (`file`, whose features are `names`: a completion's by
        default); None when it has none, or (with a warning) an unreadable one."""
        if directory is None:
            return None
        path = Path(directory) / file
        try:
            data = json.loads(path.read_text())
            calibration = cls(
                dict(data["weights"]),
                float(data["intercept"]),
                float(data.get("threshold", 0.0)),
                str(data.get("fitted_on", "")),
                str(data.get("quiet_after", "")),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            _dropped(path, f"{type(error).__name__}: {error}")
            return None
        known = names if names is not None else set(features(evidence([], "", "", False)))
        unknown = set(calibration.weights) - known
        if unknown:
            _dropped(path, f"unknown features {', '.join(sorted(unknown))}")
            return None
        return calibration


def _dropped(path: Path, reason: str) -> None:
    # Without a word, the gate and the quiet characters would vanish and every completion be shown.
    log.warning(
        "ignoring %s (%s): completions get no confidence estimate, and its minConfidence threshold "
        "and quietAfter characters are not used",
        path,
        reason,
    )


def assess(
    calibration: Calibration | None, logprobs: list[float], text: str, prefix: str, cut: bool
) -> tuple[Evidence, float | None]:
    """A final completion's evidence and, when the checkpoint is calibrated, its chance of acceptance."""
    found = evidence(logprobs, text, prefix, cut)
    return found, calibration.estimate(found) if calibration else None


def fit(rows: list[tuple[Evidence, bool]], l2: float = 1e-2, steps: int = 2000, fitted_on: str = "") -> Calibration:
    """Logistic regression of acceptance on a completion's features (fit_values)."""
    return fit_values([(features(found), accepted) for found, accepted in rows], l2, steps, fitted_on)


def fit_values(
    rows: list[tuple[dict[str, float], bool]], l2: float = 1e-2, steps: int = 2000, fitted_on: str = ""
) -> Calibration:
    """Logistic regression of acceptance on features by name (standardized, L2-penalized, full-batch
    L-BFGS); the weights are returned on the features' own scale."""
    import torch

    names = list(rows[0][0])
    x = torch.tensor([[values[name] for name in names] for values, _ in rows], dtype=torch.float64)
    y = torch.tensor([float(accepted) for _, accepted in rows], dtype=torch.float64)
    mean, std = x.mean(0), x.std(0).clamp(min=1e-6)
    z = (x - mean) / std
    w = torch.zeros(len(names), dtype=torch.float64, requires_grad=True)
    b = torch.zeros((), dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([w, b], max_iter=steps, line_search_fn="strong_wolfe")

    def loss() -> torch.Tensor:
        optimizer.zero_grad()
        value = torch.nn.functional.binary_cross_entropy_with_logits(z @ w + b, y) + l2 * (w * w).sum()
        value.backward()
        return value

    optimizer.step(loss)
    weights = (w / std).detach()
    intercept = float(b.detach() - (weights * mean).sum())
    return Calibration(
        {name: round(float(v), 5) for name, v in zip(names, weights, strict=True)},
        round(intercept, 5),
        fitted_on=fitted_on,
    )


def gate_threshold(min_confidence: float | None, calibration: Calibration | None) -> float:
    """The confidence a completion shown while typing needs: `min_confidence` when set, else the threshold
    chosen with the checkpoint's calibration, else 0 (every completion)."""
    if min_confidence is not None:
        return min_confidence
    return calibration.threshold if calibration is not None else 0.0


class SlotLogprobs:
    """Per gap slot, the log-probability of the token it holds, taken at the step it was chosen
    (for a slot still masked, the latest step's guess). Slots pinned at a step (clamped, revealed
    earlier, past END) keep what they had."""

    def __init__(self, gap: range):
        import torch

        self.gap = gap
        self.logprob = torch.zeros(len(gap))

    def observe(self, logits: torch.Tensor, chosen: torch.LongTensor, live: torch.BoolTensor) -> None:
        """`logits` (canvas, vocab) of one step, after its processors; `chosen` (canvas,) its draft;
        `live` (canvas,) the slots the step decided (diffusion_infill.engine.completion.sampler.Step.live)."""
        import torch

        with torch.no_grad():
            window = logits[self.gap.start : self.gap.stop].float()
            live = live[self.gap.start : self.gap.stop]
            scores = torch.log_softmax(window, dim=-1).gather(-1, chosen[self.gap.start : self.gap.stop, None])[:, 0]
            self.logprob = torch.where(live, scores, self.logprob)

    def grow(self, gap: range) -> None:
        """The gap grew at its end (engine.completion.infill): the slots it had keep their log-probabilities."""
        import torch

        self.logprob = torch.cat([self.logprob, torch.zeros(len(gap) - len(self.gap))])
        self.gap = gap

    def first(self, count: int) -> list[float]:
        """The first `count` slots' log-probabilities (the insertion's tokens and its END)."""
        return self.logprob[:count].tolist()
