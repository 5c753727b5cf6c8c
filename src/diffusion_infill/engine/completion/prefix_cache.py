"""The encoder's KV cache of the last prefix, cropped and extended instead of recomputed: as-you-type
requests mostly extend the previous prefix by a character or two."""

from __future__ import annotations

import torch
from transformers.cache_utils import DynamicCache


class PrefixCache:
    """The encoder KV cache of the last prefix, cropped and extended instead of recomputed."""

    def __init__(self):
        self.ids: list[int] = []
        self.cache: DynamicCache | None = None
        self.reused_tokens = 0  # of the last call, for benchmarks and tests

    def encode(self, model, ids: list[int]) -> DynamicCache:
        common = 0
        for old, new in zip(self.ids, ids, strict=False):
            if old != new:
                break
            common += 1
        if self.cache is None or common == 0 or not _croppable(self.cache, len(self.ids) - common):
            self.cache, common = DynamicCache(config=model.config.text_config), 0
        elif common < len(self.ids):
            self.cache.crop(common - len(self.ids))  # transformers 5: a negative count of tokens to drop
        if common < len(ids):
            tail = torch.tensor([ids[common:]], device=model.device)
            try:
                with torch.no_grad():
                    model.model.encoder(input_ids=tail, cache=self.cache)
            except BaseException:
                # Cropped, or extended in some layers and not others (out of memory midway):
                # the cache matches no prefix any more, so the next call starts from nothing.
                self.ids, self.cache = [], None
                raise
        self.ids, self.reused_tokens = list(ids), common
        return self.cache


def _croppable(cache: DynamicCache, tokens: int) -> bool:
    """Whether `tokens` can be dropped from the end of `cache`: not once a sliding-window layer (a real
    checkpoint's) has slid past states it would need again. (transformers' past recording keeps them,
    but the decoder then reads every recorded state under a mask sized for the window.)"""
    return tokens == 0 or not any(
        getattr(layer, "sliding_window", None) and layer.get_seq_length() >= layer.sliding_window
        for layer in cache.layers
    )
