"""Training batches on the clamped canvas, and the loss.

Each batch encodes B prefixes once and denoises K canvases per prefix (the encoder costs
more than the canvas, so extra canvases are cheap supervision). A canvas is either one
gap followed by the clamped suffix head (completion) or several gaps between clamped
segments (repair). Gap targets are the insertion, one END, then slots left out of the
loss. Noise is masked-diffusion style: each target slot is noised with probability t and
the loss is weighted by 1/t (MDLM, arXiv:2406.07524; LLaDA, arXiv:2502.09992), or, with
`weighting="plain"`, plain cross-entropy over the noised slots (DiffusionGemma's fine-tuning). An
autoregressive loss on the encoder's output supervises the shared weights at every
prefix token.

Revision: a share of the single-gap canvases hold a draft instead of noise (the rest of an
earlier line that followed the same token, the target with other tokens of the document in
it, or the target itself), no slot masked, and the loss covers every gap slot: the
model learns to keep a right draft and to say where a wrong one differs, which is what the
engine asks of it when it checks a candidate copied from the document.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from transformers.cache_utils import DynamicCache
from transformers.convert_slow_tokenizer import bytes_to_unicode

from diffusion_infill.engine.completion import canvas as canvas_layout
from diffusion_infill.engine.completion.context import context_ids
from diffusion_infill.engine.completion.sampler import pin, softcapped_logits
from diffusion_infill.engine.tokens import SpecialIds

IGNORE = -100
EARLIER_TOKENS = 4_000  # of the document before the window, decoded for context: the cost stays bounded


@dataclass(frozen=True)
class ObjectiveConfig:
    prefix_lengths: tuple[int, ...] = (32, 64, 128, 128)  # one drawn per batch
    gap_slots: int = 24
    suffix_head: int = 8
    prefixes: int = 12  # B: prefixes encoded per batch
    canvases_per_prefix: int = 4  # K
    repair_fraction: float = 0.25  # multi-gap canvases
    line_fraction: float = 0.4  # single-gap insertions that run to the end of the line
    empty_fraction: float = 0.02  # single-gap canvases whose insertion is empty
    self_conditioning: float = 0.5  # batches that first denoise once and condition on it
    ar_weight: float = 1.0  # autoregressive loss on the encoder output
    # Gap slots after END: "ignore" leaves them out of the loss; "pad" makes them PAD targets,
    # noised like the insertion, so every slot learns whether the insertion reaches it.
    after_end: str = "ignore"
    # "inverse_t": each noised slot's loss over t, averaged over the target slots (an ELBO);
    # "plain": the mean cross-entropy over the noised slots, every slot weighted alike.
    weighting: str = "inverse_t"
    kind_weights: tuple[tuple[str, float], ...] = (("python", 0.7), ("json", 0.15), ("markdown", 0.15))
    # Of the longest prefix, tokens given to related lines from further up the document
    # (diffusion_infill.engine.completion.context), as inference does; shorter prefixes give the same share. 0: none.
    context_tokens: int = 0
    # Single-gap canvases that start from a draft (see the module's docstring); 0: none.
    draft_fraction: float = 0.0
    draft_weight: float = 1.0  # the revision loss beside the diffusion loss
    draft_search: int = 2_000  # tokens before the cursor searched for an earlier line to copy

    @property
    def canvas_length(self) -> int:
        return self.gap_slots + self.suffix_head


@dataclass
class Batch:
    prefix: torch.LongTensor  # (B, P)
    canvas: torch.LongTensor  # (B*K, C) clean canvas: known tokens, targets in gaps
    known: torch.BoolTensor  # (B*K, C)
    target: torch.LongTensor  # (B*K, C) IGNORE outside gap targets
    draft: torch.LongTensor  # (B*K, C) a revision canvas's starting tokens; IGNORE in every slot of the others

    @property
    def tokens(self) -> int:
        """Tokens the model reads: the prefixes and the canvases (for tokens a second)."""
        return self.prefix.numel() + self.canvas.numel()


class Streams:
    """One token stream per kind of document: [BOS] doc [EOS] [BOS] doc [EOS] ..."""

    def __init__(self, tokenized: dict[str, list[list[int]]], ids: SpecialIds, newline_tokens: np.ndarray):
        self.streams = {
            kind: np.array([t for doc in docs for t in [ids.bos, *doc, ids.eos]], dtype=np.int32)
            for kind, docs in tokenized.items()
        }
        self.newline = newline_tokens  # bool per vocabulary id: token contains "\n"


class TokenBytes:
    """The UTF-8 bytes of token ids by table lookup (byte-level BPE): about ten times as fast
    as `tokenizer.decode`, and batch making decodes thousands of tokens per prefix."""

    def __init__(self, tokenizer):
        # Printable ASCII stands for itself in byte-level BPE, so special tokens (`<pad>`) decode
        # to their own text through the same table.
        byte_of = {char: byte for byte, char in bytes_to_unicode().items()}
        tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        try:
            pieces = [bytes(byte_of[char] for char in token) for token in tokens]
        except KeyError:
            raise ValueError("context needs a byte-level BPE tokenizer") from None
        self.lengths = np.array([len(piece) for piece in pieces])
        self.starts = np.cumsum(self.lengths) - self.lengths
        self.table = np.frombuffer(b"".join(pieces), dtype=np.uint8)

    def __call__(self, ids: np.ndarray) -> tuple[bytes, np.ndarray]:
        """The bytes of `ids`, and where each token's bytes end."""
        lengths = self.lengths[ids]
        ends = np.cumsum(lengths)
        offsets = np.repeat(self.starts[ids] - (ends - lengths), lengths)
        return self.table[np.arange(len(offsets)) + offsets].tobytes(), ends


class BatchMaker:
    def __init__(
        self, streams: Streams, ids: SpecialIds, config: ObjectiveConfig, rng: np.random.Generator, tokenizer=None
    ):
        """`tokenizer` decodes and encodes the context lines; needed when `config.context_tokens`."""
        self.streams, self.ids, self.config, self.rng = streams, ids, config, rng
        kinds = [k for k, _ in config.kind_weights if k in streams.streams]
        weights = np.array([w for k, w in config.kind_weights if k in streams.streams])
        self.kinds, self.kind_p = kinds, weights / weights.sum()
        if config.context_tokens and tokenizer is None:
            raise ValueError("context_tokens needs the tokenizer")
        self.tokenizer = tokenizer
        self.token_bytes = TokenBytes(tokenizer) if config.context_tokens else None

    def prefix(self, tokens: np.ndarray, start: int, length: int) -> np.ndarray:
        """The `length` tokens the encoder reads for a cursor at `start`: the window before it;
        with context, lines from further up the document that share identifiers with the
        cursor's line, then a window as much shorter (inference: `prefix.encode_context`)."""
        window = tokens[start - length : start]
        budget = self.config.context_tokens * length // max(self.config.prefix_lengths)
        if not budget:
            return window
        shortest = start - length + budget  # where the shortest window starts; lines come from before it
        low = max(0, shortest - EARLIER_TOKENS)
        bos = np.flatnonzero(tokens[low:start] == self.ids.bos)
        document = low + int(bos[-1]) + 1 if len(bos) else low
        if document - 1 >= start - length:  # the document fits, BOS and all: no context, as in inference
            return window
        data, ends = self.token_bytes(tokens[document:start])
        earlier = data[: ends[shortest - document - 1]].decode("utf-8", "replace")
        if not len(bos):  # the decoded part starts mid-document: its first line is not whole
            earlier = earlier.partition("\n")[2]
        line = data.rpartition(b"\n")[2].decode("utf-8", "replace")
        context = context_ids(self.tokenizer, earlier, line, budget)
        return np.concatenate([np.array(context, dtype=tokens.dtype), tokens[start - length + len(context) : start]])

    def insertion_length(self, tokens: np.ndarray, start: int) -> int:
        """Tokens inserted at `start`: the rest of the line, or a random span (empty: rarely)."""
        c, rng = self.config, self.rng
        length = 0
        if rng.random() < c.line_fraction:
            while length < c.gap_slots - 1 and not self.streams.newline[tokens[start + length]]:
                length += 1
        # Empty insertions stay rare: with lines ending at the cursor counted in, END-first was
        # the commonest lesson and the model said nothing everywhere (probes at 500 steps).
        if length == 0 and rng.random() >= c.empty_fraction:
            length = int(rng.integers(1, c.gap_slots)) if rng.random() < 0.5 else int(rng.integers(1, 7))
        return length

    def sample_start(self, prefix_length: int) -> tuple[np.ndarray, int]:
        """A stream of a kind drawn by weight, and a cursor with `prefix_length` tokens before it."""
        c, rng = self.config, self.rng
        tokens = self.streams.streams[self.kinds[rng.choice(len(self.kinds), p=self.kind_p)]]
        return tokens, int(rng.integers(prefix_length, len(tokens) - 2 * c.canvas_length))

    def _single_gap(self, tokens: np.ndarray, start: int) -> tuple[list, list]:
        c = self.config
        length = self.insertion_length(tokens, start)
        inserted = tokens[start : start + length].tolist()
        head = tokens[start + length : start + length + c.suffix_head].tolist()
        layout = canvas_layout.build([c.gap_slots, head], self.ids.mask)
        target = inserted + [self.ids.end] + [self.after_end] * (c.gap_slots - length - 1)
        return layout, target + [IGNORE] * len(head)

    def draft(self, tokens: np.ndarray, start: int, inserted: list[int]) -> list[int]:
        """A plausible starting text for the gap at `start`: the rest of an earlier line of the
        document after the token the cursor follows (as the engine's candidates are), the target
        with a token of the document in place of one of its own or one token shifted, or the
        target itself. At most `gap_slots - 1` tokens, so END fits after it."""
        rng, room = self.rng, self.config.gap_slots - 1
        kind = rng.random()
        if kind < 0.5:
            copied = self._earlier_line_rest(tokens, start)
            if copied is not None:
                return copied[:room]
        if kind < 0.75 and inserted:
            return self._edited(tokens, start, inserted)[:room]
        return inserted[:room]

    def _earlier_line_rest(self, tokens: np.ndarray, start: int) -> list[int] | None:
        """What followed the token before the cursor somewhere earlier in the same document,
        up to that line's end; the latest of the places that share the most tokens before it."""
        low = max(1, start - self.config.draft_search)
        bos = np.flatnonzero(tokens[low:start] == self.ids.bos)
        low = low + int(bos[-1]) + 1 if len(bos) else low
        places = low + 1 + np.flatnonzero(tokens[low : start - 2] == tokens[start - 1])
        if not len(places):
            return None
        shared = np.ones(len(places), dtype=int)
        for back in (2, 3):
            before = places - back
            agrees = (before >= low) & (tokens[np.maximum(before, 0)] == tokens[start - back])
            shared += agrees & (shared == back - 1)
        place = int(places[np.flatnonzero(shared == shared.max())[-1]])
        end = place
        while end < start - 1 and end - place < self.config.gap_slots and not self.streams.newline[tokens[end]]:
            end += 1
        return tokens[place:end].tolist()

    def _edited(self, tokens: np.ndarray, start: int, inserted: list[int]) -> list[int]:
        """The target with one token replaced by another of the document, or one dropped or repeated."""
        rng, edited = self.rng, list(inserted)
        at = int(rng.integers(len(edited)))
        edit = rng.random()
        if edit < 0.6:
            window = tokens[max(0, start - 256) : start]
            edited[at] = int(window[rng.integers(len(window))])
        elif edit < 0.8 and len(edited) > 1:
            del edited[at]
        else:
            edited.insert(at, edited[at])
        return edited

    @property
    def after_end(self) -> int:
        """The target of a gap slot after its END."""
        return self.ids.pad if self.config.after_end == "pad" else IGNORE

    def _multi_gap(self, tokens: np.ndarray, start: int) -> tuple[list, list]:
        c, rng, ids = self.config, self.rng, self.ids
        length = c.canvas_length
        segments, targets, position, used, gaps = [], [], start, 0, 0
        gap_next = rng.random() < 0.5
        while used < length:
            if gap_next:
                span, extra = int(rng.integers(0, 6)), int(rng.integers(0, 3))
                slots = span + 1 + extra
                if used + slots > length:
                    break
                segments.append(slots)
                targets += tokens[position : position + span].tolist() + [ids.end] + [self.after_end] * extra
                position, used, gaps = position + span, used + slots, gaps + 1
            else:
                count = min(int(rng.integers(1, 7)), length - used)
                segments.append(tokens[position : position + count].tolist())
                targets += [IGNORE] * count
                position, used = position + count, used + count
            gap_next = not gap_next
        if used < length:
            segments.append(tokens[position : position + length - used].tolist())
            targets += [IGNORE] * (length - used)
        if gaps == 0:
            return self._single_gap(tokens, start)
        return canvas_layout.build(segments, ids.mask), targets

    def make(self) -> Batch:
        c, rng = self.config, self.rng
        prefix_length = int(rng.choice(c.prefix_lengths))
        prefixes, canvases, known, targets, drafts = [], [], [], [], []
        for _ in range(c.prefixes):
            tokens, start = self.sample_start(prefix_length)
            prefixes.append(self.prefix(tokens, start, prefix_length))
            for _ in range(c.canvases_per_prefix):
                multi = rng.random() < c.repair_fraction
                layout, target = (self._multi_gap if multi else self._single_gap)(tokens, start)
                pairs = zip(layout.tokens, target, strict=True)
                clean = [tok if t == IGNORE else t for tok, t in pairs]
                canvases.append(clean)
                known.append(layout.known)
                targets.append(target)
                drafted = not multi and c.draft_fraction > 0 and rng.random() < c.draft_fraction
                drafts.append(self._draft_row(tokens, start, clean, target) if drafted else [IGNORE] * len(clean))
        return Batch(
            prefix=torch.tensor(np.stack(prefixes), dtype=torch.long),
            canvas=torch.tensor(canvases, dtype=torch.long),
            known=torch.tensor(known, dtype=torch.bool),
            target=torch.tensor(targets, dtype=torch.long),
            draft=torch.tensor(drafts, dtype=torch.long),
        )

    def _draft_row(self, tokens: np.ndarray, start: int, clean: list[int], target: list[int]) -> list[int]:
        """A single-gap canvas as it starts from a draft: the draft, END, PAD to the gap's end,
        then the known suffix head (as the engine lays out a candidate)."""
        gap = self.config.gap_slots
        inserted = target[: target.index(self.ids.end)]
        draft = self.draft(tokens, start, inserted)
        return draft + [self.ids.end] + [self.ids.pad] * (gap - len(draft) - 1) + clean[gap:]


def noise_canvas(batch: Batch, ids: SpecialIds, noise: str, vocab: int, generator: torch.Generator):
    """Noises each gap target slot with probability t (one t per canvas); unused slots are
    always noise. Returns the noised canvas, the noised-target mask and t. The draws come from
    `generator` on the CPU whatever the batch's device, so a run is the same on any device."""
    rows, length = batch.canvas.shape
    device = batch.canvas.device
    # stratified t across the batch: the 1/t weight makes the loss noisy; evenly spread t less so
    t = ((torch.rand(1, generator=generator) + torch.arange(rows) / rows) % 1.0).unsqueeze(1)
    t = t.clamp(min=1.0 / length).to(device)
    is_target = batch.target != IGNORE
    noised = is_target & (torch.rand(rows, length, generator=generator).to(device) < t)
    # at least one noised slot per canvas, so every canvas teaches something
    first = torch.argmax(is_target.int(), dim=-1)
    noised[torch.arange(rows, device=device), first] |= ~noised.any(dim=-1)
    gap = ~batch.known
    replace = noised | (gap & ~is_target)
    if noise == "mask":
        fill = torch.full_like(batch.canvas, ids.mask)
    else:
        fill = torch.randint(0, vocab, batch.canvas.shape, generator=generator).to(device)  # as EntropyBoundSampler
    # A revision canvas is its draft, whole: no slot of it is noised, which is how the model tells
    # a draft to judge (every slot may be wrong) from a canvas being denoised (revealed slots are right).
    drafted = batch.draft != IGNORE
    return torch.where(drafted, batch.draft, torch.where(replace, fill, batch.canvas)), noised, t


def _encode(model, prefix: torch.LongTensor):
    """The prefix through the encoder: its KV cache and the autoregressive loss on it."""
    vocab = model.config.text_config.vocab_size
    cache = DynamicCache(config=model.config.text_config)
    encoded = model.model.encoder(input_ids=prefix, cache=cache)
    ar_logits = softcapped_logits(model, encoded.last_hidden_state[:, :-1])
    return encoded.cache, F.cross_entropy(ar_logits.reshape(-1, vocab), prefix[:, 1:].reshape(-1))


def ar_only_loss(model, batch: Batch) -> tuple[torch.Tensor, dict[str, float]]:
    """The autoregressive objective alone (no canvas): a cheap step that trains the layers the
    decoder shares with the encoder (an autoregressive-first phase)."""
    _, ar_loss = _encode(model, batch.prefix)
    return ar_loss, {"ar": ar_loss.item()}


def loss(
    model, batch: Batch, ids: SpecialIds, config: ObjectiveConfig, noise: str, generator: torch.Generator
) -> tuple[torch.Tensor, dict[str, float]]:
    vocab = model.config.text_config.vocab_size
    cache, ar_loss = _encode(model, batch.prefix)
    cache.batch_repeat_interleave(config.canvases_per_prefix)

    noised_canvas, noised, t = noise_canvas(batch, ids, noise, vocab, generator)
    self_conditioning = None
    if torch.rand(1, generator=generator).item() < config.self_conditioning:
        with torch.no_grad():
            first = model(decoder_input_ids=noised_canvas, cache=cache).logits
            # as in inference: known slots are one-hot, unused slots one-hot on the mask token
            unused = ~batch.known & (batch.target == IGNORE)
            pinned_tokens = torch.where(unused, ids.mask, batch.canvas)
            self_conditioning = pin(first, batch.known | unused, pinned_tokens).to(model.dtype)
    logits = model(decoder_input_ids=noised_canvas, cache=cache, self_conditioning_logits=self_conditioning).logits
    cross_entropy = F.cross_entropy(
        logits.reshape(-1, vocab), batch.target.reshape(-1).clamp(min=0), reduction="none"
    ).view_as(noised)
    revised = (batch.draft != IGNORE).any(dim=-1, keepdim=True)
    denoised = noised & ~revised
    per_slot = cross_entropy * denoised
    if config.weighting == "plain":
        diffusion_loss = per_slot.sum() / denoised.sum().clamp(min=1)
    else:
        diffusion_loss = (per_slot / t).sum() / ((batch.target != IGNORE) & ~revised).sum().clamp(min=1)
    total = diffusion_loss + config.ar_weight * ar_loss
    parts = {"diffusion": diffusion_loss.item(), "ar": ar_loss.item()}
    if revised.any():
        # every gap slot of a revision canvas: keep the draft's right tokens, replace its wrong ones
        judged = (batch.target != IGNORE) & revised
        revision_loss = (cross_entropy * judged).sum() / judged.sum()
        total = total + config.draft_weight * revision_loss
        parts["revision"] = revision_loss.item()
    return total, parts
