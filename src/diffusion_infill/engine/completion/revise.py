"""The model judges candidates copied from the code (engine.completion.line_drafts), all in one
decoder pass, and revises the best where it doubts it.

Each candidate is laid on the completion canvas as its starting state: its tokens, END, PAD
to the gap's end, then the clamped suffix head, exactly as training lays a revision canvas
(engine.training.objective). One pass over the batch of canvases gives, at every slot, the
model's distribution for the token that belongs there; a candidate's evidence is the
log-probability of its own tokens and END. A revision swaps the token the model doubts most for
the model's own choice, or for a name of the document (a variable-length edit), and is kept
only when the model scores it above the candidate.
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass

import torch

from diffusion_infill.engine.completion import canvas as canvas_layout
from diffusion_infill.engine.completion.confidence import Calibration
from diffusion_infill.engine.completion.line_drafts import IDENTIFIER, Candidate
from diffusion_infill.engine.completion.prefix import EncodedContext, encode_context, healing_candidates
from diffusion_infill.engine.completion.sampler import softcapped_logits
from diffusion_infill.engine.drafts import InfillRequest

MAX_NAMES = 24  # names of the document tried in place of a doubted one
FLOOR = -10.0  # the lowest log-probability a token is given


@dataclass(frozen=True)
class Judged:
    text: str  # the insertion
    candidate: Candidate  # where it came from
    logprobs: tuple[float, ...]  # the model's log-probability of each of its tokens, then of END
    revised: bool = False  # the model changed the candidate's text

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
        self.context: EncodedContext = encode_context(self.loaded.tokenizer, ids.bos, request.prefix, request.suffix,
                                                      spec.max_prefix, spec.suffix_head,
                                                      context_tokens=spec.context_tokens)
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
        hidden = model.model.decoder(decoder_input_ids=canvas, cache=cache,
                                     decoder_position_ids=positions).last_hidden_state
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

    def text(self, tokens: list[int]) -> str:
        return self.loaded.tokenizer.decode(tokens)[len(self.context.healed):]


def judge(engine, request: InfillRequest, candidates: list[Candidate], revise: bool = True) -> list[Judged]:
    """`candidates` judged by the model in one pass, best first; with `revise`, the best one's most
    doubted token swapped in a second pass, kept only where the model prefers it."""
    judge_ = Judge(engine, request)
    fitting = [(c, t) for c in candidates if (t := judge_.tokens(c.text)) is not None]
    if not fitting:
        return []
    scores, logprobs = judge_.score([tokens for _, tokens in fitting])
    judged = sorted((Judged(c.text, c, s) for (c, _), s in zip(fitting, scores, strict=True)),
                    key=lambda j: j.mean_logprob, reverse=True)
    if revise:
        best = next(i for i, (c, _) in enumerate(fitting) if c.text == judged[0].text)
        revision = _revised(judge_, judged[0], fitting[best][1], logprobs[best], request.prefix)
        if revision is not None:
            judged.insert(0, revision)
    return judged


def _revised(judge_: Judge, judged: Judged, tokens: list[int], logprobs: torch.Tensor, prefix: str) -> Judged | None:
    """The candidate with its most doubted token replaced: by the model's choice there, or by a name
    of the document in place of the name that token belongs to. None when no edit scores higher."""
    doubted = min(range(len(tokens)), key=lambda i: judged.logprobs[i])
    if judged.logprobs[doubted] > -1.0:
        return None  # the model doubts nothing enough to pay a pass for
    edits = []
    choice = int(logprobs[doubted].argmax())
    if choice != tokens[doubted] and choice != judge_.loaded.ids.end:
        edits.append(tokens[:doubted] + [choice] + tokens[doubted + 1 :])
    edits += _renamed(judge_, judged.text, tokens, doubted, prefix)
    edits = [e for e in edits if len(e) < len(judge_.layout.gaps[0])][: MAX_NAMES + 1]
    if not edits:
        return None
    scores, _ = judge_.score(edits)
    score, edit = max(zip(scores, edits, strict=True), key=lambda pair: sum(pair[0]) / len(pair[0]))
    if sum(score) / len(score) <= judged.mean_logprob:
        return None
    return Judged(judge_.text(edit), judged.candidate, score, revised=True)


def _renamed(judge_: Judge, text: str, tokens: list[int], doubted: int, prefix: str) -> list[list[int]]:
    """The candidate with the name holding the doubted token replaced by each name of the document."""
    tokenizer, healed = judge_.loaded.tokenizer, judge_.context.healed
    start = len(tokenizer.decode(tokens[:doubted])) - len(healed)
    name = next((m for m in IDENTIFIER.finditer(text) if m.start() <= max(start, 0) < m.end()), None)
    if name is None:
        return []
    names = _document_names(prefix, exclude=name.group())
    edits = []
    for other in names:
        edited = tokenizer.encode(healed + text[: name.start()] + other + text[name.end():], add_special_tokens=False)
        edits.append(edited)
    return edits


def _document_names(prefix: str, exclude: str) -> list[str]:
    """The names of the last lines of the document, nearest first."""
    seen: dict[str, None] = {}
    for match in reversed(list(IDENTIFIER.finditer(prefix[-3000:]))):
        name = match.group()
        if name != exclude and len(name) > 1 and not re.fullmatch(r"\d+", name):
            seen.setdefault(name, None)
        if len(seen) == MAX_NAMES:
            break
    return list(seen)


REVISION_FILE = "revision.json"  # beside a checkpoint: the calibration of judged candidates
FEATURES = frozenset({"mean_logprob", "min_logprob", "log_chars", "log_agree", "matched", "analogous", "document",
                      "revised", "after_word"})


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
        "revised": float(judged.revised),
        "after_word": float(bool(last) and (last.isalnum() or last == "_")),
    }


def load_calibration(directory) -> Calibration | None:
    return Calibration.load(directory, REVISION_FILE, FEATURES)
