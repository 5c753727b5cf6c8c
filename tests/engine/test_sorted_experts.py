"""Specification of the sorted experts (engine.sorted_experts): the eager loop's output without its
per-expert host synchronisations, on float and on int8 expert weights, and the same tokens a pass."""

from __future__ import annotations

import pytest
import torch

from diffusion_infill.bench.throughput import Shape, diffusion_model
from diffusion_infill.engine import sorted_experts
from diffusion_infill.engine.quantization import INT4_GROUP, quantize_in_place

# 26B-A4B's layout at a test's size: sliding and full layers, 16 experts top 4, experts as wide as
# int4's group, so that a GPU run quantizes every expert (torchao skips a width that is no multiple)
SHAPE = Shape(6, 64, 96, 4, 2, 1, 16, 32, 16, 4, INT4_GROUP, vocab=256, sliding_window=128)
CANVAS = 32


def experts_output(model, hidden: torch.Tensor, index: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    with torch.no_grad():
        return model.model.decoder.layers[0].experts(hidden, index, weights)


def routed(tokens: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random hidden states and routing: each token to 4 distinct experts, some experts missed."""
    hidden = torch.randn(tokens, SHAPE.hidden)
    index = torch.stack([torch.randperm(SHAPE.experts - 3)[: SHAPE.top_k] for _ in range(tokens)])
    return hidden, index, torch.rand(tokens, SHAPE.top_k).softmax(-1)


def model_with(experts: str, quantize: str = "none"):
    torch.manual_seed(0)
    model = diffusion_model(SHAPE, CANVAS, torch.float32, experts)
    quantize_in_place(model, quantize)
    return model


@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_sorted_experts_add_up_what_the_eager_loop_does(quantize):
    inputs = routed(40)
    eager = experts_output(model_with("eager", quantize), *inputs)
    ordered = experts_output(model_with(sorted_experts.NAME, quantize), *inputs)
    torch.testing.assert_close(ordered, eager, rtol=1e-5, atol=1e-5)


def greedy_tokens(model, seed: int) -> torch.Tensor:
    """The argmax of a pass over a random canvas after a random prompt, as the sampler's first step."""
    from transformers import DynamicCache

    generator = torch.Generator().manual_seed(seed)
    prompt = torch.randint(10, SHAPE.vocab, (1, 48), generator=generator)
    canvas = torch.randint(10, SHAPE.vocab, (1, CANVAS), generator=generator)
    cache = DynamicCache(config=model.config.text_config)
    with torch.no_grad():
        model.model.encoder(input_ids=prompt, cache=cache)
        positions = torch.arange(48, 48 + CANVAS).unsqueeze(0)
        hidden = model.model.decoder(decoder_input_ids=canvas, cache=cache, decoder_position_ids=positions)
        return model.lm_head(hidden.last_hidden_state).argmax(-1)


@pytest.mark.parametrize("quantize", ["none", "int8"])
def test_a_pass_through_sorted_experts_picks_the_eager_loops_tokens_on_a_fixed_seed(quantize):
    # random weights leave the logits flat, so int8 against float would flip tokens on rounding alone;
    # int8 against float on the trained embedded model: tests/engine/test_quantization.py (sorted there)
    eager = greedy_tokens(model_with("eager", quantize), seed=7)
    assert torch.equal(greedy_tokens(model_with(sorted_experts.NAME, quantize), seed=7), eager)
