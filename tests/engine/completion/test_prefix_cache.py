"""Specification of the encoder's prefix cache (diffusion_infill.engine.completion.prefix_cache): a prefix that
extends, shortens or diverges from the last one reuses what they share and gives the logits of a fresh prefill."""

import pytest
import torch

from diffusion_infill.engine.completion import canvas as canvas_layout
from diffusion_infill.engine.completion.prefix_cache import PrefixCache


def tokens(tokenizer, text):
    return tokenizer.encode(text, add_special_tokens=False)


def decoder_logits(model, cache, canvas_tokens):
    """One decoder pass on a canvas placed right after the cached prefix, as denoise does."""
    offset = cache.get_seq_length()
    positions = torch.arange(offset, offset + len(canvas_tokens)).unsqueeze(0)
    with torch.no_grad():
        return model(
            decoder_input_ids=torch.tensor([canvas_tokens]), cache=cache, decoder_position_ids=positions
        ).logits


@pytest.fixture
def canvas_tokens(tiny_loaded, ids):
    suffix = tokens(tiny_loaded.tokenizer, ")\n")
    return canvas_layout.completion_canvas(suffix, 12, 4, ids).tokens


@pytest.fixture
def prefix_a(tiny_loaded, ids):
    return [ids.bos, *tokens(tiny_loaded.tokenizer, "def area(width, height):\n")]


def test_extending_the_prefix_reuses_the_cached_tokens(tiny_loaded, prefix_a):
    cache = PrefixCache()
    cache.encode(tiny_loaded.model, prefix_a)
    cache.encode(tiny_loaded.model, prefix_a + tokens(tiny_loaded.tokenizer, "    return"))

    assert cache.reused_tokens == len(prefix_a)


def test_extended_cache_gives_the_same_logits_as_a_fresh_prefill(tiny_loaded, prefix_a, canvas_tokens):
    model, extended = tiny_loaded.model, prefix_a + tokens(tiny_loaded.tokenizer, "    return width")
    reused = PrefixCache()
    reused.encode(model, prefix_a)

    incremental = decoder_logits(model, reused.encode(model, extended), canvas_tokens)
    fresh = decoder_logits(model, PrefixCache().encode(model, extended), canvas_tokens)

    torch.testing.assert_close(incremental, fresh, atol=1e-5, rtol=1e-5)


def test_diverging_prefix_crops_the_cache_to_the_shared_part(tiny_loaded, prefix_a):
    cache, tokenizer = PrefixCache(), tiny_loaded.tokenizer
    first, second = tokens(tokenizer, "    return width"), tokens(tokenizer, "    pass")
    shared = next(n for n, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    assert shared > 0

    cache.encode(tiny_loaded.model, prefix_a + first)
    cached = cache.encode(tiny_loaded.model, prefix_a + second)

    assert cache.reused_tokens == len(prefix_a) + shared
    assert cached.get_seq_length() == len(prefix_a + second)


def test_cropped_cache_gives_the_same_logits_as_a_fresh_prefill(tiny_loaded, prefix_a, canvas_tokens):
    model, tokenizer = tiny_loaded.model, tiny_loaded.tokenizer
    cache = PrefixCache()
    cache.encode(model, prefix_a + tokens(tokenizer, "    return width"))
    diverged = prefix_a + tokens(tokenizer, "    pass")

    cropped = decoder_logits(model, cache.encode(model, diverged), canvas_tokens)
    fresh = decoder_logits(model, PrefixCache().encode(model, diverged), canvas_tokens)

    torch.testing.assert_close(cropped, fresh, atol=1e-5, rtol=1e-5)


def test_shorter_prefix_is_served_by_cropping_alone(tiny_loaded, prefix_a, canvas_tokens):
    model = tiny_loaded.model
    cache = PrefixCache()
    cache.encode(model, prefix_a + tokens(tiny_loaded.tokenizer, "    return width"))

    cropped = decoder_logits(model, cache.encode(model, prefix_a), canvas_tokens)

    assert cache.reused_tokens == len(prefix_a)
    torch.testing.assert_close(
        cropped, decoder_logits(model, PrefixCache().encode(model, prefix_a), canvas_tokens), atol=1e-5, rtol=1e-5
    )


def test_same_prefix_again_reuses_every_token(tiny_loaded, prefix_a):
    cache = PrefixCache()
    cache.encode(tiny_loaded.model, prefix_a)
    again = cache.encode(tiny_loaded.model, prefix_a)

    assert cache.reused_tokens == len(prefix_a)
    assert again.get_seq_length() == len(prefix_a)


def test_prefix_with_a_different_first_token_is_encoded_from_scratch(tiny_loaded, prefix_a, canvas_tokens):
    model = tiny_loaded.model
    cache = PrefixCache()
    cache.encode(model, prefix_a)
    other = prefix_a[1:]

    logits = decoder_logits(model, cache.encode(model, other), canvas_tokens)

    assert cache.reused_tokens == 0
    torch.testing.assert_close(
        logits, decoder_logits(model, PrefixCache().encode(model, other), canvas_tokens), atol=1e-5, rtol=1e-5
    )


def test_decoding_does_not_change_the_cache(tiny_loaded, prefix_a, canvas_tokens):
    cache = PrefixCache().encode(tiny_loaded.model, prefix_a)

    first = decoder_logits(tiny_loaded.model, cache, canvas_tokens)
    second = decoder_logits(tiny_loaded.model, cache, canvas_tokens)

    assert cache.get_seq_length() == len(prefix_a)
    torch.testing.assert_close(first, second)
