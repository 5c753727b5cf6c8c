"""The denoising loop's settings and the values tuned per checkpoint (sampler.json): plain data, so
settings modules and the command line can use them without importing torch or transformers
(the loop itself: diffusion_infill.engine.completion.sampler)."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path

log = logging.getLogger(__name__)

TUNING_FILE = "sampler.json"  # beside the checkpoint: the settings chosen for it on tuning cases
# the clamped-canvas sampler's values for a checkpoint without sampler.json (and a setting left to it);
# the instruction path leaves these to the checkpoint's generation_config (instruct.generate_overrides)
UNTUNED = {"entropy_bound": 0.5, "t_min": 0.4, "t_max": 0.8, "stable_insertion": 0}
# the clamped-canvas sampler's values for settings left to the checkpoint that sampler.json never tunes;
# None, not these, is the default, so that a value said out loud (even one of these) reaches generate
LOOP_DEFAULTS = {"max_steps": 24, "stability_threshold": 1, "confidence_threshold": 0.05}


@dataclass(frozen=True)
class DenoiseSettings:
    # None: the checkpoint's value (instruction path: its generation_config; clamped canvas: its
    # sampler.json, else UNTUNED's or LOOP_DEFAULTS')
    max_steps: int | None = None  # upper bound on decoder forward passes
    entropy_bound: float | None = None  # summed entropy of the slots accepted per step
    # also accept every live slot whose top probability is at least this (Fast-dLLM: 0.9); 0: off
    accept_probability: float = 0.0
    t_min: float | None = None  # temperature at the last step
    t_max: float | None = None  # temperature at the first step
    stability_threshold: int | None = None  # steps the argmax must stay unchanged to stop
    # Mean entropy (nats per live slot) under which a stable canvas stops before every slot
    # is revealed; what ends a mask-noise loop is usually the last masked slot revealed.
    confidence_threshold: float | None = None
    # stop once the insertion up to END has been the same for this many steps, however unsure; 0: off
    stable_insertion: int | None = None
    # lm_head and entropy on the slots that need them only (same tokens); False: on the whole canvas
    live_logits: bool = True

    def for_checkpoint(self, directory: str | Path | None) -> DenoiseSettings:
        """These settings with the checkpoint's tuned values where they are left to it (None)."""
        tuned = load_tuning(directory)
        return replace(self, **{k: v for k, v in tuned.items() if getattr(self, k) is None})

    def resolved(self) -> DenoiseSettings:
        """Every setting left to the checkpoint and not tuned for it at UNTUNED's or LOOP_DEFAULTS' value."""
        return replace(self, **{k: v for k, v in {**UNTUNED, **LOOP_DEFAULTS}.items() if getattr(self, k) is None})


TUNED_FIELDS = tuple(UNTUNED)


def load_tuning(directory: str | Path | None) -> dict:
    """The checkpoint's tuned sampler settings (sampler.json); {} when it has none. What cannot be read
    is dropped with a warning naming the file and the settings that fall back to UNTUNED's."""
    if directory is None:
        return {}
    path = Path(directory) / TUNING_FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        log.warning(
            "ignoring %s (%s): the sampler settings %s are not tuned for this checkpoint",
            path,
            f"{type(error).__name__}: {error}",
            ", ".join(TUNED_FIELDS),
        )
        return {}
    if not isinstance(data, dict):
        log.warning(
            "ignoring %s (not a JSON object): the sampler settings %s are not tuned for this checkpoint",
            path,
            ", ".join(TUNED_FIELDS),
        )
        return {}
    tuned, bad = {}, []
    for name in TUNED_FIELDS:
        if name in data:
            try:
                tuned[name] = _tuned_value(name, data[name])
            except (TypeError, ValueError):
                bad.append(f"{name}={data[name]!r}")
    if bad:
        log.warning("ignoring %s in %s: not tuned for this checkpoint", ", ".join(bad), path)
    return tuned


def _tuned_value(name: str, value: object) -> float | int:
    kind = type(UNTUNED[name])
    if isinstance(value, bool) or not isinstance(value, int | float) or (kind is int and value != int(value)):
        raise TypeError(f"{name} must be a number")
    return kind(value)


def save_tuning(directory: Path, values: dict, fitted_on: str) -> None:
    """Writes sampler.json: the tuned values and what they were chosen on."""
    unknown = set(values) - set(TUNED_FIELDS)
    if unknown:
        raise ValueError(f"not tuned per checkpoint: {', '.join(sorted(unknown))}")
    (directory / TUNING_FILE).write_text(json.dumps({**values, "fitted_on": fitted_on}, indent=1) + "\n")
