"""Engine settings: one dataclass, commented defaults."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace

from diffusion_infill.engine.completion.denoise_settings import DenoiseSettings


@dataclass(frozen=True)
class EngineSettings:
    max_gap_tokens: int | None = None  # slots for the insertion; None: what the model was trained with
    # A shorter first gap (a shorter canvas, a cheaper step) that grows to max_gap_tokens only when
    # the model fills it without END; None: max_gap_tokens from the start. Most completions are short,
    # so most never grow; a much shorter gap grows so often that it costs more passes than it saves
    # (what 16 measured against 8, 12 and 24: docs/performance.md, "A canvas sized to the request").
    first_gap_tokens: int | None = 16
    mode: str = "auto"  # engine.requests.MODES: "single-line", "multi-line", or "auto": multi-line on an empty line
    # One line wanted, mask noise: stop once the revealed slots hold a newline. Revealed slots keep
    # their tokens, so the line is final; later passes would decide only what the cut drops.
    stop_at_line_end: bool = True
    # Single-line completions start from whole lines copied from the code, judged by the model in one
    # pass (engine.completion.judge), when the checkpoint has a calibration for them (revision.json).
    document_drafts: bool = True
    # The autoregressive baseline's counterpart, prompt lookup decoding, runs (with document_drafts) only where the
    # prompt repeats the tokens before the cursor (engine.baseline.autoregressive.lookup_pays); True: on
    # every request, as `bench` measures it beside the default.
    prompt_lookup_always: bool = False
    min_insertion_tokens: int = 1  # END is kept out of the first slots: an empty suggestion shows nothing
    repair_rounds: int = 2  # times a draft that breaks closure is re-noised before truncating
    repair_steps: int = 6  # denoising steps of one repair round: only a few slots are re-noised
    denoise: DenoiseSettings = field(default_factory=DenoiseSettings)

    def multi_line(self, prefix: str) -> bool:
        """Whether a completion at the end of `prefix` may span lines."""
        if self.mode == "auto":
            return not prefix.rsplit("\n", 1)[-1].strip()
        return self.mode == "multi-line"

    def shape(self, text: str, prefix: str) -> str:
        """The insertion cut to one line where only one is wanted."""
        return text if self.multi_line(prefix) else text.split("\n", 1)[0]

    def repair_settings(self) -> DenoiseSettings:
        return replace(self.denoise, max_steps=min(self.repair_steps, self.denoise.resolved().max_steps))

    def with_overrides(self, **values) -> EngineSettings:
        """Returns a copy with the given top-level or denoise fields replaced (None: keep)."""
        values = {k: v for k, v in values.items() if v is not None}
        own = {f.name for f in fields(self)} - {"denoise"}
        denoise = replace(self.denoise, **{k: v for k, v in values.items() if k not in own})
        return replace(self, denoise=denoise, **{k: v for k, v in values.items() if k in own})


def default_threads() -> int:
    """Torch CPU threads for the server and the commands: half the cores, at least 1.

    The editor needs CPU too, and torch threads that outnumber free cores spin against each
    other, which on a busy machine makes a step many times slower (docs/performance.md, "Threads").
    """
    return max(1, (os.cpu_count() or 2) // 2)
