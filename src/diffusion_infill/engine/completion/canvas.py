"""The infilling canvas: gap slots to denoise between known, clamped tokens.

One layout serves training and inference. A single-gap completion canvas is
``[gap slots][suffix head]``: every gap slot attends to the code right after the cursor.
A repair canvas alternates known segments and gaps. Each gap gets more slots than it
needs; the model closes the insertion with one END token and the slots after it are
dropped, so the length of an insertion is the model's choice.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from diffusion_infill.engine.tokens import SpecialIds

SPEC_FILE = "infill.json"


@dataclass(frozen=True)
class CanvasSpec:
    """How a checkpoint was trained to read a canvas; saved beside its weights."""

    noise: str = "mask"  # "mask": absorbing mask token; "uniform": random tokens (DiffusionGemma's own)
    gap_slots: int = 24  # default slots for one gap; more than most insertions need
    suffix_head: int = 8  # known suffix tokens clamped after the gap
    max_prefix: int = 128  # encoder context, in tokens
    # of max_prefix, tokens given to related lines from further up (diffusion_infill.engine.completion.context); 0: none
    context_tokens: int = 0

    def save(self, directory: Path) -> None:
        (directory / SPEC_FILE).write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path) -> CanvasSpec | None:
        """The spec saved with a checkpoint, or None for checkpoints not trained on this canvas."""
        path = directory / SPEC_FILE
        if not path.is_file():
            return None
        return cls(**json.loads(path.read_text()))


@dataclass
class Canvas:
    tokens: list[int]  # known tokens in place, gap slots hold the mask token
    known: list[bool]  # clamped positions, restored after every denoising step
    gaps: list[range] = field(default_factory=list)  # slot ranges, one per gap, in order

    def __len__(self) -> int:
        return len(self.tokens)


def build(segments: Sequence[Sequence[int] | int], mask_id: int) -> Canvas:
    """Lays out known token segments (sequences) and gaps (slot counts) left to right."""
    canvas = Canvas(tokens=[], known=[])
    for segment in segments:
        if isinstance(segment, int):
            start = len(canvas.tokens)
            canvas.tokens += [mask_id] * segment
            canvas.known += [False] * segment
            canvas.gaps.append(range(start, start + segment))
        else:
            canvas.tokens += list(segment)
            canvas.known += [True] * len(segment)
    return canvas


def suffix_head(suffix_ids: Sequence[int], length: int, ids: SpecialIds) -> list[int]:
    """The first suffix tokens, padded with EOS where the file ends (as in training)."""
    head = list(suffix_ids[:length])
    return head + [ids.eos] * (length - len(head))


def completion_canvas(suffix_ids: Sequence[int], gap_slots: int, head: int, ids: SpecialIds) -> Canvas:
    return build([gap_slots, suffix_head(suffix_ids, head, ids)], ids.mask)


def insertion(tokens: Sequence[int], gap: range, ids: SpecialIds) -> list[int]:
    """The tokens a gap holds up to its END; unfilled and pad slots are dropped."""
    out = []
    for position in gap:
        token = tokens[position]
        if token == ids.end:
            break
        if token not in (ids.mask, ids.pad):
            out.append(token)
    return out


def settled(tokens: Sequence[int], gap: range, ids: SpecialIds) -> list[int]:
    """The tokens a gap holds up to its END or its first masked slot: with mask noise, the
    part of a draft that later steps keep (a masked slot's argmax is only a guess)."""
    first_masked = next((position for position in gap if tokens[position] == ids.mask), gap.stop)
    return insertion(tokens, range(gap.start, first_masked), ids)


def shown(current: Sequence[int], argmax: Sequence[int], gap: range, ids: SpecialIds, noise: str) -> list[int]:
    """What a draft shows of a step's canvas (`current`, its tokens; `argmax`, its best guesses): with
    mask noise only the revealed slots up to the first masked one, which later steps keep; with
    uniform noise the argmax, which they refine."""
    return settled(current, gap, ids) if noise == "mask" else insertion(argmax, gap, ids)


def after_end(tokens: Sequence[int], canvas: Canvas, ids: SpecialIds) -> list[int]:
    """Slots past the first END of each gap: unused, kept as noise like in training."""
    unused = []
    for gap in canvas.gaps:
        ends = [p for p in gap if tokens[p] == ids.end]
        if ends:
            unused += range(ends[0] + 1, gap.stop)
    return unused
