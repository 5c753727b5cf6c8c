"""The autoregressive baseline's batches and loss (diffusion_infill.engine.training.fim): PSM sequences
cut from the same streams, cursors and insertion lengths as the diffusion objective."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from diffusion_infill.engine.baseline.autoregressive import FimIds
from diffusion_infill.engine.training import fim
from diffusion_infill.engine.training.objective import IGNORE, ObjectiveConfig, Streams
from diffusion_infill.engine.training.train import _tokenize

CONFIG = ObjectiveConfig(prefix_lengths=(16, 24), gap_slots=12, suffix_head=4, prefixes=3)


@pytest.fixture(scope="module")
def fim_ids(tiny_fim) -> FimIds:
    return tiny_fim.ids


@pytest.fixture(scope="module")
def maker(tiny_fim, tiny_documents, ids):
    tokenizer = tiny_fim.tokenizer
    newline = np.array(["Ċ" in token for token in tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))])
    documents = [doc for doc in tiny_documents if len(doc.text) > 2000][:4]
    streams = Streams(_tokenize(documents, tokenizer), ids, newline)
    return fim.FimBatchMaker(streams, ids, CONFIG, np.random.default_rng(0), fim_ids=tiny_fim.ids)


def split(row: list[int], ids: FimIds) -> tuple[list[int], list[int], list[int]]:
    """prefix, suffix, middle of one PSM sequence."""
    assert row[0] == ids.prefix
    suffix_at, middle_at = row.index(ids.suffix), row.index(ids.middle)
    end_at = row.index(ids.end, middle_at)
    return row[1:suffix_at], row[suffix_at + 1 : middle_at], row[middle_at + 1 : end_at]


def test_each_row_is_prefix_suffix_middle_then_end(maker, fim_ids):
    batch = maker.make()
    assert batch.input_ids.shape[0] == CONFIG.prefixes * fim.ROWS_PER_PREFIX
    for row in batch.input_ids.tolist():
        prefix, suffix, middle = split(row, fim_ids)
        assert len(prefix) in CONFIG.prefix_lengths
        assert len(suffix) == CONFIG.suffix_head
        assert len(middle) < CONFIG.gap_slots


def test_the_middle_is_the_text_between_prefix_and_suffix(maker, fim_ids):
    """Cut from one stream: prefix + middle + suffix is a contiguous piece of it."""
    stream = np.concatenate(list(maker.streams.streams.values())).tolist()
    text = ",".join(map(str, stream))
    for row in maker.make().input_ids.tolist():
        prefix, suffix, middle = split(row, fim_ids)
        assert ",".join(map(str, prefix + middle + suffix)) in text


def test_padding_is_left_out_of_the_loss(maker, fim_ids):
    batch = maker.make()
    padded = batch.input_ids == fim_ids.pad
    assert padded.any(), "rows differ in length"
    assert (batch.labels[padded] == IGNORE).all()
    assert (batch.labels[~padded] == batch.input_ids[~padded]).all()


def test_the_loss_trains_the_model(tiny_fim, maker):
    model = tiny_fim.model
    batch = maker.make()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    model.train()
    before, _ = fim.loss(model, batch)
    for _ in range(5):
        value, parts = fim.loss(model, batch)
        optimizer.zero_grad()
        value.backward()
        optimizer.step()
    after, _ = fim.loss(model, batch)
    model.load_state_dict(state)  # the fixture is shared
    model.eval()
    assert set(parts) == {"fim"}
    assert after.item() < before.item()


def test_the_baseline_matches_the_embedded_model_in_size(fim_ids):
    """4.98M parameters against the embedded DiffusionGemma's 5.03M (src/diffusion_infill/engine/model/recipe.json)."""
    with torch.device("meta"):
        model = fim.fim_model(fim.FIM_ARCHITECTURE, fim.FIM_ARCHITECTURE.vocab_size + 3, fim_ids)
    parameters = sum(p.numel() for p in model.parameters())
    assert abs(parameters - 5_032_436) / 5_032_436 < 0.02
