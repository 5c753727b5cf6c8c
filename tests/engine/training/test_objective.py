"""Specification of the training batches and the loss (diffusion_infill.engine.training.objective)."""

import copy

import numpy as np
import pytest
import torch

from diffusion_infill.engine.completion.prefix import encode_context
from diffusion_infill.engine.training import objective
from diffusion_infill.engine.training.objective import IGNORE, BatchMaker, ObjectiveConfig, Streams, noise_canvas
from diffusion_infill.engine.training.train import _tokenize

PREFIXES, CANVASES = 3, 2
CONFIG = ObjectiveConfig(
    prefix_lengths=(16, 24),
    gap_slots=12,
    suffix_head=4,
    prefixes=PREFIXES,
    canvases_per_prefix=CANVASES,
    repair_fraction=0.5,
)
NOISE_KINDS = ["mask", "uniform"]


@pytest.fixture(scope="module")
def streams(tiny_tokenizer, tiny_documents, ids):
    vocabulary = tiny_tokenizer.convert_ids_to_tokens(list(range(len(tiny_tokenizer))))
    newline = np.array(["Ċ" in token for token in vocabulary])
    documents = [doc for doc in tiny_documents if len(doc.text) > 2000][:4]
    return Streams(_tokenize(documents, tiny_tokenizer), ids, newline)


def make_batches(streams, ids, count=8, config=CONFIG, seed=0):
    maker = BatchMaker(streams, ids, config, np.random.default_rng(seed))
    return [maker.make() for _ in range(count)]


@pytest.fixture(scope="module")
def batches(streams, ids):
    return make_batches(streams, ids)


def gap_runs(known_row):
    """Maximal runs of unknown slots: the gaps (known segments are never empty)."""
    runs, start = [], None
    for position, known in enumerate([*known_row.tolist(), True]):
        if not known and start is None:
            start = position
        elif known and start is not None:
            runs.append(range(start, position))
            start = None
    return runs


def rows(batches):
    for batch in batches:
        yield from zip(batch.canvas, batch.known, batch.target, strict=True)


# Streams


def test_streams_wrap_each_document_in_bos_and_eos(ids):
    streams = Streams({"python": [[10, 11], [12]]}, ids, np.zeros(16, dtype=bool))

    assert streams.streams["python"].tolist() == [ids.bos, 10, 11, ids.eos, ids.bos, 12, ids.eos]


# Batch shapes


def test_prefix_batch_is_prefixes_by_prefix_length(batches):
    for batch in batches:
        assert batch.prefix.shape[0] == PREFIXES
        assert batch.prefix.shape[1] in CONFIG.prefix_lengths


def test_canvas_batch_is_canvases_by_canvas_length(batches):
    shape = (PREFIXES * CANVASES, CONFIG.canvas_length)

    for batch in batches:
        assert batch.canvas.shape == batch.known.shape == batch.target.shape == shape


def test_batches_are_reproducible_from_the_seed(streams, ids):
    first, second = make_batches(streams, ids, count=2), make_batches(streams, ids, count=2)

    for a, b in zip(first, second, strict=True):
        assert torch.equal(a.prefix, b.prefix)
        assert torch.equal(a.canvas, b.canvas)
        assert torch.equal(a.target, b.target)


def test_batches_mix_single_and_multi_gap_canvases(batches):
    gap_counts = {len(gap_runs(known)) for _, known, _ in rows(batches)}

    assert 1 in gap_counts
    assert max(gap_counts) > 1


# Targets


def test_every_gap_target_has_exactly_one_end(batches, ids):
    for _, known, target in rows(batches):
        for gap in gap_runs(known):
            assert target[gap.start : gap.stop].tolist().count(ids.end) == 1


def test_gap_target_is_only_ignore_after_its_end(batches, ids):
    for _, known, target in rows(batches):
        for gap in gap_runs(known):
            slots = target[gap.start : gap.stop].tolist()
            assert set(slots[slots.index(ids.end) + 1 :]) <= {IGNORE}


def test_with_pad_after_end_every_gap_slot_after_its_end_is_a_pad_target(streams, ids):
    config = ObjectiveConfig(**{**CONFIG.__dict__, "after_end": "pad"})
    for _, known, target in rows(make_batches(streams, ids, count=4, config=config)):
        for gap in gap_runs(known):
            slots = target[gap.start : gap.stop].tolist()
            assert set(slots[slots.index(ids.end) + 1 :]) <= {ids.pad}


def test_gap_target_before_its_end_is_real_tokens(batches, ids):
    for _, known, target in rows(batches):
        for gap in gap_runs(known):
            slots = target[gap.start : gap.stop].tolist()
            assert all(token not in (IGNORE, ids.mask, ids.end) for token in slots[: slots.index(ids.end)])


def test_known_slots_have_ignore_targets(batches):
    for batch in batches:
        assert batch.target[batch.known].eq(IGNORE).all()


def test_clean_canvas_holds_the_targets_in_the_gaps(batches, ids):
    for canvas, known, target in rows(batches):
        is_target = target != IGNORE
        assert torch.equal(canvas[is_target], target[is_target])
        assert canvas[~known & ~is_target].eq(ids.mask).all()


def test_completion_canvases_are_one_full_gap_then_the_suffix_head(batches):
    layouts = [gap_runs(known) for _, known, _ in rows(batches)]
    completion = [range(0, CONFIG.gap_slots)]

    assert completion in layouts
    for layout in layouts:
        assert layout == completion or all(len(gap) < CONFIG.gap_slots for gap in layout)


def read_left_to_right(canvas, known, target, end):
    """Known tokens and gap insertions in canvas order: the text the canvas stands for."""
    return [
        int(token) if is_known else int(goal)
        for token, is_known, goal in zip(canvas, known, target, strict=True)
        if is_known or goal not in (IGNORE, end)
    ]


def test_canvas_continues_the_text_right_after_its_prefix(batches, streams, ids):
    stream = streams.streams["python"]
    checked = 0
    for batch in batches:
        for index, prefix in enumerate(batch.prefix.numpy()):
            width = len(prefix)
            windows = np.lib.stride_tricks.sliding_window_view(stream, width)
            (matches,) = np.nonzero((windows == prefix).all(axis=1))
            if len(matches) != 1:
                continue  # a repeated prefix: ambiguous position
            start = int(matches[0]) + width
            for row in range(index * CANVASES, (index + 1) * CANVASES):
                text = read_left_to_right(batch.canvas[row], batch.known[row], batch.target[row], ids.end)
                assert text == stream[start : start + len(text)].tolist()
                checked += 1
    assert checked > 0


# Context from further up the document

RELATED = "TARGET_SETTING = config(alpha)\n"
FILLER = "".join(f"filler_{n} = {n}\n" for n in range(100))
CURSOR_LINE = "result = TARGET_SETTING"
CONTEXT_CONFIG = ObjectiveConfig(**{**CONFIG.__dict__, "prefix_lengths": (64,), "context_tokens": 32})


def context_maker(tokenizer, ids, documents, config=CONTEXT_CONFIG):
    """A BatchMaker over `documents` and the stream with the cursor after the last one."""
    newline = np.array(["Ċ" in token for token in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))])
    tokenized = [tokenizer.encode(text, add_special_tokens=False) for text in documents]
    streams = Streams({"python": tokenized}, ids, newline)
    stream = streams.streams["python"]
    return BatchMaker(streams, ids, config, np.random.default_rng(0), tokenizer=tokenizer), stream, len(stream) - 1


def test_training_prefix_puts_related_lines_of_the_document_before_the_window(tiny_tokenizer, ids):
    maker, stream, cursor = context_maker(tiny_tokenizer, ids, [RELATED + FILLER + CURSOR_LINE])
    prefix = maker.prefix(stream, cursor, 64).tolist()
    related = tiny_tokenizer.encode(RELATED, add_special_tokens=False)

    assert len(prefix) == 64
    assert prefix[: len(related)] == related
    assert prefix[len(related) :] == stream[cursor - 64 + len(related) : cursor].tolist()


def test_training_prefix_takes_no_lines_from_another_document(tiny_tokenizer, ids):
    maker, stream, cursor = context_maker(tiny_tokenizer, ids, [RELATED, FILLER + CURSOR_LINE])

    assert maker.prefix(stream, cursor, 64).tolist() == stream[cursor - 64 : cursor].tolist()


def test_training_prefix_is_the_window_when_nothing_relates(tiny_tokenizer, ids):
    maker, stream, cursor = context_maker(tiny_tokenizer, ids, [RELATED + FILLER + "result = other_name"])

    assert maker.prefix(stream, cursor, 64).tolist() == stream[cursor - 64 : cursor].tolist()


def test_training_prefix_matches_the_inference_prefix(tiny_tokenizer, ids):
    """The same document, the cursor at a token boundary: training and inference read the same ids."""
    text = RELATED + FILLER + CURSOR_LINE
    maker, stream, cursor = context_maker(tiny_tokenizer, ids, [text])
    inference = encode_context(tiny_tokenizer, ids.bos, text, "", 64, 4, heal=False, context_tokens=32)

    assert maker.prefix(stream, cursor, 64).tolist() == inference.prefix_ids


def test_training_prefixes_with_context_are_exactly_the_drawn_length(streams, tiny_tokenizer, ids):
    config = ObjectiveConfig(**{**CONFIG.__dict__, "prefix_lengths": (32, 64), "context_tokens": 32})
    maker = BatchMaker(streams, ids, config, np.random.default_rng(0), tokenizer=tiny_tokenizer)
    for _ in range(4):
        assert maker.make().prefix.shape[1] in config.prefix_lengths


def test_some_training_prefixes_hold_context_on_real_files(streams, tiny_tokenizer, ids):
    config = ObjectiveConfig(**{**CONTEXT_CONFIG.__dict__, "prefixes": 24})
    with_context = BatchMaker(streams, ids, config, np.random.default_rng(0), tokenizer=tiny_tokenizer).make()
    without = BatchMaker(
        streams, ids, ObjectiveConfig(**{**config.__dict__, "context_tokens": 0}), np.random.default_rng(0)
    ).make()

    changed = (with_context.prefix != without.prefix).any(dim=1)
    assert 0 < changed.sum() < len(changed)
    assert torch.equal(with_context.canvas, without.canvas)


def test_training_prefixes_without_context_tokens_are_the_window(streams, tiny_tokenizer, ids):
    maker = BatchMaker(streams, ids, CONFIG, np.random.default_rng(0), tokenizer=tiny_tokenizer)
    tokens = streams.streams["python"]

    assert maker.prefix(tokens, 5000, 24).tolist() == tokens[5000 - 24 : 5000].tolist()


def test_context_tokens_need_the_tokenizer(streams, ids):
    with pytest.raises(ValueError, match="tokenizer"):
        BatchMaker(streams, ids, CONTEXT_CONFIG, np.random.default_rng(0))


# Noising


@pytest.mark.parametrize("noise", NOISE_KINDS)
def test_noise_never_changes_known_slots(batches, ids, noise):
    generator = torch.Generator().manual_seed(0)
    for batch in batches:
        noised, _, _ = noise_canvas(batch, ids, noise, 512, generator)
        assert torch.equal(noised[batch.known], batch.canvas[batch.known])


@pytest.mark.parametrize("noise", NOISE_KINDS)
def test_noise_hits_at_least_one_target_slot_per_canvas(batches, ids, noise):
    generator = torch.Generator().manual_seed(0)
    for batch in batches:
        _, hit, _ = noise_canvas(batch, ids, noise, 512, generator)
        assert hit.any(dim=-1).all()
        assert not (hit & (batch.target == IGNORE)).any()


def test_mask_noise_writes_the_mask_token_on_noised_slots(batches, ids):
    generator = torch.Generator().manual_seed(0)
    for batch in batches:
        noised, hit, _ = noise_canvas(batch, ids, "mask", 512, generator)
        assert noised[hit].eq(ids.mask).all()
        assert torch.equal(
            noised[~hit], torch.where(batch.known | (batch.target != IGNORE), batch.canvas, ids.mask)[~hit]
        )


def test_uniform_noise_draws_from_the_whole_vocabulary_like_the_sampler(batches, ids):
    generator = torch.Generator().manual_seed(0)
    drawn = torch.cat([noise_canvas(batch, ids, "uniform", 512, generator)[0][~batch.known] for batch in batches])
    assert drawn.min() >= 0 and drawn.max() < 512
    assert drawn.unique().numel() > 100


@pytest.mark.parametrize("noise", NOISE_KINDS)
def test_unused_gap_slots_are_always_noise(batches, ids, noise):
    generator = torch.Generator().manual_seed(0)
    for batch in batches:
        noised, _, _ = noise_canvas(batch, ids, noise, 512, generator)
        unused = ~batch.known & (batch.target == IGNORE)
        if noise == "mask":
            assert noised[unused].eq(ids.mask).all()
        else:
            assert noised[unused].ge(8).all()


def test_noise_level_is_one_per_canvas_and_never_zero(batches, ids):
    _, _, t = noise_canvas(batches[0], ids, "mask", 512, torch.Generator().manual_seed(0))

    assert t.shape == (PREFIXES * CANVASES, 1)
    assert t.min() >= 1.0 / CONFIG.canvas_length
    assert t.max() <= 1.0


# The loss


@pytest.fixture
def trainable(tiny_loaded):
    """A copy of the tiny model in training mode (the shared one stays untouched)."""
    return copy.deepcopy(tiny_loaded.model).train()


@pytest.mark.parametrize("self_conditioning", [0.0, 1.0], ids=["plain", "self-conditioned"])
@pytest.mark.parametrize("noise", NOISE_KINDS)
def test_loss_is_finite_and_backpropagates(trainable, batches, ids, noise, self_conditioning):
    config = ObjectiveConfig(**{**CONFIG.__dict__, "self_conditioning": self_conditioning})

    total, parts = objective.loss(trainable, batches[0], ids, config, noise, torch.Generator().manual_seed(0))
    total.backward()

    assert torch.isfinite(total)
    assert set(parts) == {"diffusion", "ar"}
    assert all(np.isfinite(value) for value in parts.values())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in trainable.parameters())


def test_the_autoregressive_phase_trains_the_layers_the_decoder_shares(trainable, batches):
    total, parts = objective.ar_only_loss(trainable, batches[0])
    total.backward()

    assert set(parts) == {"ar"} and torch.isfinite(total)
    shared = trainable.model.encoder.language_model.layers[0]
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in shared.parameters())


def test_bf16_autocast_loss_is_close_to_float32(trainable, batches, ids):
    def loss():
        return objective.loss(trainable, batches[0], ids, CONFIG, "mask", torch.Generator().manual_seed(0))[0].item()

    full = loss()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        half = loss()

    assert half == pytest.approx(full, rel=0.05)


def test_self_conditioned_loss_trains_the_self_conditioning_block(trainable, batches, ids):
    config = ObjectiveConfig(**{**CONFIG.__dict__, "self_conditioning": 1.0})

    total, _ = objective.loss(trainable, batches[0], ids, config, "mask", torch.Generator().manual_seed(0))
    total.backward()

    block = trainable.model.decoder.self_conditioning
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in block.parameters())


def test_loss_trains_the_shared_embeddings(trainable, batches, ids):
    total, _ = objective.loss(trainable, batches[0], ids, CONFIG, "mask", torch.Generator().manual_seed(0))
    total.backward()

    embeddings = trainable.model.encoder.language_model.embed_tokens.weight
    assert embeddings.grad is not None and embeddings.grad.abs().sum() > 0


def test_plain_weighting_is_the_mean_cross_entropy_over_the_noised_slots(trainable, batches, ids):
    def diffusion(weighting):
        config = ObjectiveConfig(**{**CONFIG.__dict__, "self_conditioning": 0.0, "weighting": weighting})
        return objective.loss(trainable, batches[0], ids, config, "mask", torch.Generator().manual_seed(0))[1]

    generator = torch.Generator().manual_seed(0)
    noised_canvas, noised, t = noise_canvas(batches[0], ids, "mask", 0, generator)
    with torch.no_grad():
        cache, _ = objective._encode(trainable, batches[0].prefix)
        cache.batch_repeat_interleave(CANVASES)
        logits = trainable(decoder_input_ids=noised_canvas, cache=cache).logits
    per_slot = torch.nn.functional.cross_entropy(
        logits.transpose(1, 2), batches[0].target.clamp(min=0), reduction="none"
    )
    expected = per_slot[noised].mean().item()

    assert diffusion("plain")["diffusion"] == pytest.approx(expected, rel=1e-4)
    assert diffusion("inverse_t")["diffusion"] != pytest.approx(expected, rel=1e-2)  # 1/t weighs slots unlike


# Revision canvases: a draft to judge instead of noise

DRAFTING = ObjectiveConfig(**{**CONFIG.__dict__, "draft_fraction": 1.0, "repair_fraction": 0.0, "after_end": "pad"})


@pytest.fixture(scope="module")
def drafted(streams, ids):
    return make_batches(streams, ids, config=DRAFTING)


def test_without_a_draft_fraction_no_canvas_starts_from_a_draft(batches):
    assert all((batch.draft == IGNORE).all() for batch in batches)


def test_a_revision_canvas_is_its_draft_then_end_then_pad_then_the_suffix_head(drafted, ids):
    gap = DRAFTING.gap_slots
    for batch in drafted:
        for draft, clean in zip(batch.draft.tolist(), batch.canvas.tolist(), strict=True):
            end = draft.index(ids.end)
            assert end < gap and ids.mask not in draft[:end]
            assert draft[end + 1 : gap] == [ids.pad] * (gap - end - 1)
            assert draft[gap:] == clean[gap:]


def test_drafts_are_sometimes_the_target_and_sometimes_differ(drafted, ids):
    same = [
        d[: d.index(ids.end)] == t[: t.index(ids.end)]
        for batch in drafted
        for d, t in zip(batch.draft.tolist(), batch.target.tolist(), strict=True)
    ]
    assert 0 < sum(same) < len(same)


def test_an_earlier_line_after_the_same_tokens_is_copied_up_to_its_end(streams, ids):
    newline = np.zeros(64, dtype=bool)
    newline[9] = True
    line = [5, 6, 7, 8]  # "5 6" then "7 8", then a newline (9)
    tokens = np.array([ids.bos, *line, 9, 20, 21, *line[:2], 30, 31], dtype=np.int32)
    maker = BatchMaker(Streams({"python": []}, ids, newline), ids, DRAFTING, np.random.default_rng(0))
    maker.streams.newline = newline

    assert maker._earlier_line_rest(tokens, start=len(tokens) - 2) == [7, 8]


def test_no_earlier_line_is_copied_from_another_document(streams, ids):
    newline = np.zeros(64, dtype=bool)
    tokens = np.array([ids.bos, 5, 6, 7, ids.eos, ids.bos, 20, 6, 30], dtype=np.int32)
    maker = BatchMaker(Streams({"python": []}, ids, newline), ids, DRAFTING, np.random.default_rng(0))

    assert maker._earlier_line_rest(tokens, start=len(tokens) - 1) is None


def test_noise_leaves_a_revision_canvas_as_its_draft(drafted, ids):
    noised_canvas, _, _ = noise_canvas(drafted[0], ids, "mask", 0, torch.Generator().manual_seed(0))

    assert torch.equal(noised_canvas, drafted[0].draft)


def test_the_revision_loss_covers_every_gap_slot_of_a_revision_canvas(trainable, drafted, ids):
    def revision(batch):
        config = ObjectiveConfig(**{**DRAFTING.__dict__, "self_conditioning": 0.0})
        return objective.loss(trainable, batch, ids, config, "mask", torch.Generator().manual_seed(0))[1]["revision"]

    batch = drafted[0]
    noised_canvas, _, _ = noise_canvas(batch, ids, "mask", 0, torch.Generator().manual_seed(0))
    kept = (noised_canvas == batch.draft) & (batch.target != IGNORE)  # a slot that shows its draft token
    row, slot = (int(i) for i in torch.nonzero(kept)[0])
    changed = copy.deepcopy(batch)
    changed.target[row, slot] = (int(batch.target[row, slot]) + 1) % 64

    assert revision(changed) != pytest.approx(revision(batch), rel=1e-6)
