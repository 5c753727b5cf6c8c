"""Specification of quantized loading (diffusion_infill.engine.quantization, `--quantize`): int8 on the
CPU for the embedded model and for a DiffusionGemma of the real architecture (sliding and full layers,
a larger head on the full ones, experts), int4 refused without CUDA in one line."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
import torch

from diffusion_infill.bench.cases import build_cases
from diffusion_infill.bench.compare import CASE_SEED
from diffusion_infill.bench.metrics import run_case
from diffusion_infill.bench.throughput import Shape, diffusion_model
from diffusion_infill.engine.checkpoint import ModelLoadError, quantize_problem
from diffusion_infill.engine.completion.infill import InfillEngine, InfillRequest
from diffusion_infill.engine.completion.prefix_cache import PrefixCache
from diffusion_infill.engine.loading import load
from diffusion_infill.engine.quantization import quantize_in_place, weight_bytes
from diffusion_infill.engine.settings import EngineSettings
from tests.conftest import TINY_SPEC
from tests.engine.completion.test_prefix_cache import decoder_logits, tokens

AGREEMENT_CASES = 16
# what int8 stores in a byte: the layers' projections and experts, and the self-conditioning MLP
LAYER_WEIGHT = re.compile(
    r".*(\.layers\.\d+\.(self_attn\.[qkvo]_proj\.weight|mlp\.\w+_proj\.weight|experts\.\w+)"
    r"|\.self_conditioning\.\w+_proj\.weight)"
)
# the real architecture at a test's size: 6 layers (the 6th full), 4 experts top 2, a window wider
# than the tiny canvas spec's prefix (64), as 26B-A4B's 1024 is wider than a completion's prefix
REAL_SHAPED = Shape(6, 64, 96, 4, 2, 1, 16, 32, 4, 2, 32, vocab=256, sliding_window=128)

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def embedded(model_dir):
    return load(str(model_dir), "cpu", "float32")


@pytest.fixture(scope="module")
def embedded_int8(model_dir):
    return load(str(model_dir), "cpu", "float32", quantize="int8")


@pytest.fixture(scope="module")
def real_shaped_dir(tmp_path_factory, tiny_tokenizer):
    """A random DiffusionGemma of the real architecture saved as a checkpoint with the tiny tokenizer and
    the tiny canvas spec, so that the infill engine runs on it."""
    directory = tmp_path_factory.mktemp("real-shaped")
    torch.manual_seed(0)
    diffusion_model(replace(REAL_SHAPED, vocab=len(tiny_tokenizer)), canvas=32, dtype=torch.float32).save_pretrained(
        directory
    )
    tiny_tokenizer.save_pretrained(directory)
    TINY_SPEC.save(directory)
    return directory


def expected_int8_bytes(model: torch.nn.Module) -> int:
    """A float model's bytes once its layer weights are one byte each plus one float32 scale per row."""
    total = 0
    for name, parameter in model.named_parameters():
        if LAYER_WEIGHT.fullmatch(name):
            total += parameter.numel() + 4 * parameter.numel() // parameter.shape[-1]
        else:
            total += parameter.numel() * parameter.element_size()
    return total


def quantized_names(model: torch.nn.Module) -> set[str]:
    return {name for name, p in model.named_parameters() if type(p).__name__ != "Parameter"}


# The embedded model


def test_int8_stores_every_layer_weight_in_a_byte_and_keeps_the_embedding(embedded, embedded_int8):
    names = {name for name, _ in embedded.model.named_parameters() if LAYER_WEIGHT.fullmatch(name)}

    assert names and quantized_names(embedded_int8.model) >= names
    assert embedded_int8.model.lm_head.weight.dtype == torch.float32  # tied to the embedding, left as it was
    assert weight_bytes(embedded_int8.model) == pytest.approx(expected_int8_bytes(embedded.model), rel=0.01)
    assert weight_bytes(embedded_int8.model) < 0.5 * weight_bytes(embedded.model)  # 20.1 MB -> 8.8 MB


def test_int8_completes_most_bench_cases_as_the_float_model_does(embedded, embedded_int8):
    cases = build_cases(AGREEMENT_CASES, CASE_SEED + 11)  # tuning cases, not the reported ones
    texts = []
    for loaded in (embedded, embedded_int8):
        engine = InfillEngine(loaded, EngineSettings())
        outcome = []
        for index, case in enumerate(cases):
            torch.manual_seed(index)  # as bench.compare: each case from its own seed
            outcome.append(run_case(engine, case, loaded.tokenizer, 1)["text"])
        texts.append(outcome)

    same = sum(a == b for a, b in zip(*texts, strict=True))
    assert same > AGREEMENT_CASES // 2, f"{same} of {AGREEMENT_CASES} final texts agree"


def test_int8_completions_are_gated_on_a_confidence_close_to_the_float_models(embedded, embedded_int8):
    request = InfillRequest("def area(width, height):\n    return width * ", "\n", "python")
    finals = []
    for loaded in (embedded, embedded_int8):
        torch.manual_seed(0)
        finals.append(list(InfillEngine(loaded, EngineSettings()).complete(request))[-1])
    float_final, int8_final = finals

    assert int8_final.confidence is not None and 0 < int8_final.confidence < 1
    if int8_final.text == float_final.text:
        assert int8_final.confidence == pytest.approx(float_final.confidence, abs=0.05)


def test_int8_prefix_cache_reuse_gives_the_same_logits_as_a_fresh_prefill(embedded_int8, ids):
    model, tokenizer = embedded_int8.model, embedded_int8.tokenizer
    prefix = [tokenizer.bos_token_id, *tokens(tokenizer, "def area(width, height):\n")]
    extended = prefix + tokens(tokenizer, "    return width")
    canvas = prefix[-4:] * 3
    reused = PrefixCache()
    reused.encode(model, prefix)

    incremental = decoder_logits(model, reused.encode(model, extended), canvas)
    fresh = decoder_logits(model, PrefixCache().encode(model, extended), canvas)

    assert reused.reused_tokens == len(prefix)
    torch.testing.assert_close(incremental, fresh, atol=1e-4, rtol=1e-4)


# A checkpoint of the real architecture


def test_int8_loads_sliding_and_full_layers_and_experts_once_for_encoder_and_decoder(real_shaped_dir):
    plain = load(str(real_shaped_dir), "cpu", "float32")
    int8 = load(str(real_shaped_dir), "cpu", "float32", quantize="int8")
    text = int8.model.config.text_config
    encoder, decoder = int8.model.model.encoder.language_model, int8.model.model.decoder
    full = text.layer_types.index("full_attention")

    assert {"sliding_attention", "full_attention"} == set(text.layer_types)
    assert decoder.layers[full].self_attn.v_proj is None  # keys are values on full layers
    assert decoder.layers[full].self_attn.head_dim == 2 * decoder.layers[0].self_attn.head_dim
    for layer in (0, full):
        assert type(decoder.layers[layer].experts.gate_up_proj).__name__ == "Int8Tensor"
        assert encoder.layers[layer].self_attn.q_proj.weight is decoder.layers[layer].self_attn.q_proj.weight
    assert weight_bytes(int8.model) == pytest.approx(expected_int8_bytes(plain.model), rel=0.01)


def test_int8_real_shaped_projections_and_experts_stay_within_percents_of_the_float_ones(real_shaped_dir):
    # Per module, not the logits: a random model is chaotic (float noise of 0.1% on its weights moves
    # its logits by over 20%), so the whole model is compared on the trained embedded model above.
    plain = load(str(real_shaped_dir), "cpu", "float32").model.model.decoder
    int8 = load(str(real_shaped_dir), "cpu", "float32", quantize="int8").model.model.decoder
    hidden = torch.randn(8, REAL_SHAPED.hidden)
    experts = torch.tensor([[0, 1]] * 4 + [[2, 3]] * 4), torch.full((8, 2), 0.5)

    def error(float_out, int8_out):
        return float((int8_out - float_out).norm() / float_out.norm())

    with torch.no_grad():
        for layer in range(REAL_SHAPED.layers):
            for name in ("q_proj", "k_proj", "o_proj"):
                source = (
                    hidden if name != "o_proj" else torch.randn(8, plain.layers[layer].self_attn.o_proj.in_features)
                )
                float_proj, int8_proj = (getattr(d.layers[layer].self_attn, name) for d in (plain, int8))
                assert error(float_proj(source), int8_proj(source)) < 0.01, (layer, name)
            float_out, int8_out = (d.layers[layer].experts(hidden, *experts) for d in (plain, int8))
            assert error(float_out, int8_out) < 0.02, (layer, "experts")  # two quantized matmuls in a row


def test_int8_real_shaped_checkpoint_completes_through_the_engine_with_cache_reuse(real_shaped_dir):
    int8 = load(str(real_shaped_dir), "cpu", "float32", quantize="int8")
    engine = InfillEngine(int8, EngineSettings())
    first = InfillRequest("def area(width, height):\n    return ", "\n", "python")
    typed = InfillRequest(first.prefix + "width", "\n", "python")

    assert list(engine.complete(first))[-1].final
    assert list(engine.complete(typed))[-1].final
    assert engine.prefix_cache.reused_tokens > 0


def test_in_memory_quantization_shares_the_tied_weights_as_loading_does():
    torch.manual_seed(0)
    model = diffusion_model(REAL_SHAPED, 32, torch.float32)
    before = weight_bytes(model)
    expected = expected_int8_bytes(model)

    quantize_in_place(model, "int8")

    encoder, decoder = model.model.encoder.language_model, model.model.decoder
    assert encoder.layers[0].mlp.up_proj.weight is decoder.layers[0].mlp.up_proj.weight
    assert weight_bytes(model) == pytest.approx(expected, rel=0.01) and weight_bytes(model) < before


# Where a mode cannot run


def test_int4_without_cuda_is_one_line_naming_the_way_out(model_dir):
    with pytest.raises(ModelLoadError) as raised:
        load(str(model_dir), "cpu", quantize="int4")

    assert "int4 needs a CUDA GPU" in str(raised.value) and "int8" in str(raised.value)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("mode", "device", "problem"),
    [
        ("none", "cpu", None),
        ("int8", "cpu", None),
        ("int4", "cuda:1", None),
        ("int4", "auto", None),  # decided once torch says what auto is
        ("int4", "mps", "needs a CUDA GPU"),
        ("int2", "cpu", "expected none, int8 or int4"),
    ],
)
def test_which_modes_run_where(mode, device, problem):
    found = quantize_problem(mode, device)

    assert found is None if problem is None else problem in found


def test_prefix_cache_past_the_sliding_window_gives_the_same_logits_as_a_fresh_prefill():
    # layers sliding over 16 tokens: past the window the cache is extended, and started again where
    # a crop (one token taken back by healing, or more) would need states a sliding layer dropped
    torch.manual_seed(0)
    int8 = diffusion_model(replace(REAL_SHAPED, sliding_window=16), 32, torch.float32, experts="eager")
    quantize_in_place(int8, "int8")
    prefix, canvas = list(range(10, 50)), list(range(60, 76))
    cache = PrefixCache()
    cache.encode(int8, prefix)

    for ids, reused in ((prefix + [7, 8], len(prefix)), (prefix + [7, 8, 9], len(prefix) + 2), (prefix + [6], 0)):
        incremental = decoder_logits(int8, cache.encode(int8, ids), canvas)
        fresh = decoder_logits(int8, PrefixCache().encode(int8, ids), canvas)

        assert cache.reused_tokens == reused
        torch.testing.assert_close(incremental, fresh, atol=1e-5, rtol=1e-4)
