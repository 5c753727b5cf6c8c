"""diffusion_infill.engine.tokens: the one list of tokens that are never written into a file."""

from __future__ import annotations

from diffusion_infill.engine.tokens import END, FIM_TOKENS, SPECIAL_TOKENS, never_written, never_written_texts


def test_a_sampler_keeps_every_added_token_but_end_out(tiny_tokenizer, ids):
    banned = never_written(tiny_tokenizer, ids.end)
    assert ids.end not in banned and {ids.mask, ids.pad, ids.bos, ids.eos} <= set(banned)
    assert set(banned) | {ids.end} == set(tiny_tokenizer.added_tokens_decoder)


def test_no_markup_text_is_written_end_included(tiny_tokenizer):
    texts = never_written_texts(tiny_tokenizer)
    assert END in texts and set(SPECIAL_TOKENS) <= set(texts) and set(FIM_TOKENS) <= set(texts)
    assert set(tiny_tokenizer.convert_ids_to_tokens(list(tiny_tokenizer.added_tokens_decoder))) <= set(texts)


def test_a_servers_markers_join_the_list_when_its_tokenizer_is_not_visible():
    texts = never_written_texts(None, "<|fim_begin|>", "<|endoftext|>")
    assert {"<|fim_begin|>", "<|endoftext|>", END, *FIM_TOKENS} <= set(texts)
