"""Turning the text around the cursor into model inputs: a bounded prefix window, token
healing at the cursor, and the suffix head."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

CHARS_PER_TOKEN_BOUND = 8  # generous: the character window always holds max_prefix tokens
WINDOW_ALIGN = 32  # the window start moves in whole chunks so the KV cache stays reusable


@dataclass(frozen=True)
class EncodedContext:
    prefix_ids: list[int]  # encoder input, BOS first when the window starts at the file start
    healed: str  # prefix text taken back from the last token; the insertion must start with it
    suffix_ids: list[int]


def _window_start(prefix: str, max_chars: int) -> int:
    if len(prefix) <= max_chars:
        return 0
    start = len(prefix) - max_chars
    newline = prefix.find("\n", start, len(prefix) - 1)  # not the last character: that would leave an empty window
    return newline + 1 if newline != -1 else start


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def encode_context(tokenizer, bos_id: int, prefix: str, suffix: str, max_prefix: int, suffix_tokens: int,
                   heal: bool = True) -> EncodedContext:
    """Token ids for the prefix (at most `max_prefix`) and the suffix head.

    When the cursor sits inside a word, the last prefix token is taken back and its text
    becomes `healed`: the model then chooses a token that continues the word, instead of
    being stuck after a token boundary that a whole word would never have.
    """
    start = _window_start(prefix, max_prefix * CHARS_PER_TOKEN_BOUND)
    ids = tokenizer.encode(prefix[start:], add_special_tokens=False)
    if start == 0:
        ids = [bos_id, *ids]
    healed = ""
    if heal and prefix and _is_word_char(prefix[-1]) and len(ids) > 1:
        last = tokenizer.decode(ids[-1:])
        if prefix.endswith(last):
            healed, ids = last, ids[:-1]
    overflow = len(ids) - max_prefix
    if overflow > 0:
        drop = -(-overflow // WINDOW_ALIGN) * WINDOW_ALIGN
        ids = ids[min(drop, len(ids) - 1) :]
    suffix_ids = tokenizer.encode(suffix[: suffix_tokens * CHARS_PER_TOKEN_BOUND], add_special_tokens=False)
    return EncodedContext(ids, healed, suffix_ids[:suffix_tokens])


@lru_cache(maxsize=4)
def _token_texts(tokenizer) -> tuple[str, ...]:
    return tuple(tokenizer.decode([i]) for i in range(len(tokenizer)))


def healing_candidates(tokenizer, healed: str) -> list[int]:
    """Token ids whose text starts with `healed`: the first token of a healed insertion."""
    return [i for i, text in enumerate(_token_texts(tokenizer)) if text.startswith(healed)]
