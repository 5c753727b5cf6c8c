"""The model judges candidates copied from the code (engine.completion.copied_lines), all in one
decoder pass.

Each candidate is laid on the completion canvas whole: its tokens, END, PAD to the gap's end,
then the clamped suffix head, exactly as training lays a revision canvas
(engine.training.objective). One pass over the batch of canvases gives, at every slot, the
model's distribution for the token that belongs there; a candidate's evidence is the
log-probability of its own tokens and END, and a calibrated gate (`revision.json` beside the
checkpoint) turns it, with what the candidate's rule knows, into a chance of being accepted.
Editing a doubted token (the model's own choice there, or another name of the document) was
measured and made fewer candidates right: docs/performance.md.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass

import torch

from diffusion_infill.engine.completion import canvas as canvas_layout
from diffusion_infill.engine.completion.confidence import Calibration
from diffusion_infill.engine.completion.copied_lines import CopiedLine
from diffusion_infill.engine.completion.prefix import EncodedContext, encode_for, healing_candidates
from diffusion_infill.engine.completion.sampler import softcapped_logits
from diffusion_infill.engine.requests import InfillRequest

FLOOR = -10.0  # the lowest log-probability a token is given


@dataclass(frozen=True)
class Judged:
    text: str  # the insertion
    candidate: CopiedLine  # where it came from
    logprobs: tuple[float, ...]  # the model's log-probability of each of its tokens, then of END

    @property
    def mean_logprob(self) -> float:
        return sum(self.logprobs) / len(self.logprobs)

    @property
    def min_logprob(self) -> float:
        return min(self.logprobs)


class Judge:
    """Scores insertions at one cursor: the prefix is encoded once, each call is one decoder pass."""

    def __init__(self, engine, request: InfillRequest):
        self.loaded = engine.loaded
        spec, ids = self.loaded.spec, self.loaded.ids
        self.context: EncodedContext = encode_for(self.loaded, request.prefix, request.suffix)
        self.cache = engine.prefix_cache.encode(self.loaded.model, self.context.prefix_ids)
        slots = engine.settings.max_gap_tokens or spec.gap_slots
        self.layout = canvas_layout.completion_canvas(self.context.suffix_ids, slots, spec.suffix_head, ids)
        # The first slot holds a token that starts with the healed text, as when the engine denoises.
        vocab = self.loaded.model.config.text_config.vocab_size
        self.first_slot = torch.zeros(vocab, device=self.loaded.device)
        if self.context.healed:
            self.first_slot.fill_(float("-inf"))
            self.first_slot[healing_candidates(self.loaded.tokenizer, self.context.healed)] = 0.0
        self.passes = 0

    def tokens(self, text: str) -> list[int] | None:
        """`text`'s tokens in the gap (the healed part of the prefix first); None when they do not fit."""
        tokens = self.loaded.tokenizer.encode(self.context.healed + text, add_special_tokens=False)
        return tokens if len(tokens) < len(self.layout.gaps[0]) else None

    @torch.no_grad()
    def score(self, rows: list[list[int]]) -> tuple[list[tuple[float, ...]], torch.Tensor]:
        """Per row of insertion tokens: the log-probabilities of its tokens and END, and the gap's
        log-probabilities over the vocabulary (rows, gap, vocab)."""
        ids, model, gap = self.loaded.ids, self.loaded.model, self.layout.gaps[0]
        canvas = torch.tensor([self.layout.tokens] * len(rows), device=self.loaded.device)
        for row, tokens in zip(canvas, rows, strict=True):
            filled = tokens + [ids.end] + [ids.pad] * (len(gap) - len(tokens) - 1)
            row[gap.start : gap.stop] = torch.tensor(filled, device=row.device)
        cache = copy.deepcopy(self.cache)
        cache.batch_repeat_interleave(len(rows))
        offset = cache.get_seq_length()
        positions = torch.arange(offset, offset + canvas.shape[1], device=canvas.device).unsqueeze(0)
        hidden = model.model.decoder(
            decoder_input_ids=canvas, cache=cache, decoder_position_ids=positions
        ).last_hidden_state
        logits = softcapped_logits(model, hidden[:, gap.start : gap.stop])
        logits[:, 0] += self.first_slot
        logprobs = torch.log_softmax(logits, dim=-1)
        self.passes += 1
        scores = []
        for row, tokens in enumerate(rows):
            chosen = torch.tensor(tokens + [ids.end], device=logprobs.device)
            # a floor: one impossible token (outside the healed text's tokens) says enough, and stays finite
            chosen_logprobs = logprobs[row, : len(chosen)].gather(-1, chosen[:, None])[:, 0]
            scores.append(tuple(chosen_logprobs.clamp(min=FLOOR).tolist()))
        return scores, logprobs


def judge(engine, request: InfillRequest, candidates: list[CopiedLine]) -> list[Judged]:
    """`candidates` judged by the model in one decoder pass, best first by their mean log-probability."""
    scorer = Judge(engine, request)
    fitting = [(c, t) for c in candidates if (t := scorer.tokens(c.text)) is not None]
    if not fitting:
        return []
    scores, _ = scorer.score([tokens for _, tokens in fitting])
    return sorted(
        (Judged(c.text, c, s) for (c, _), s in zip(fitting, scores, strict=True)),
        key=lambda j: j.mean_logprob,
        reverse=True,
    )


def best(engine, request: InfillRequest, candidates: list[CopiedLine]) -> tuple[float, Judged] | None:
    """The judged candidate with the highest chance of being accepted by the engine's revision
    calibration (`engine.revision`), and that chance; None when no candidate fits the gap."""
    if not candidates:
        return None  # nothing to judge: the prefix is not even encoded
    judged = judge(engine, request, candidates)
    chances = [(engine.revision.chance(features(j, request.prefix)), j) for j in judged]
    return max(chances, key=lambda pair: pair[0], default=None)


REVISION_FILE = "revision.json"  # beside a checkpoint: the calibration of judged candidates
FEATURES = frozenset(
    {"mean_logprob", "min_logprob", "log_chars", "log_agree", "matched", "analogous", "document", "after_word"}
)


def features(judged: Judged, prefix: str) -> dict[str, float]:
    """The gate's inputs for a judged candidate, by name (FEATURES)."""
    last = prefix[-1:]
    return {
        "mean_logprob": judged.mean_logprob,
        "min_logprob": judged.min_logprob,
        "log_chars": math.log1p(len(judged.text)),
        "log_agree": math.log(judged.candidate.agree),
        "matched": float(min(judged.candidate.matched, 8)),
        "analogous": float(judged.candidate.rule == "analogous"),
        "document": float(judged.candidate.rule == "document"),
        "after_word": float(bool(last) and (last.isalnum() or last == "_")),
    }


def load_calibration(directory) -> Calibration | None:
    return Calibration.load(directory, REVISION_FILE, FEATURES)
