"""Turning the text around the cursor into model inputs: a bounded prefix window, token
healing at the cursor, and the suffix head."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from diffusion_infill.engine.completion.context import context_ids

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


def _with_context(
    tokenizer, prefix: str, start: int, ids: list[int], max_prefix: int, context_tokens: int
) -> list[int] | None:
    """[lines from further up that relate to the cursor's line] + the window's last tokens,
    `max_prefix` in all, as training builds them (`BatchMaker.prefix`); None when no line relates.
    The lines are chosen from the text before the shortest window, `max_prefix - context_tokens`."""
    shortest = max_prefix - context_tokens
    body = ids[1:] if start == 0 else ids  # without BOS
    earlier = prefix[:start] + tokenizer.decode(body[: len(body) - shortest])
    context = context_ids(tokenizer, earlier, prefix[prefix.rfind("\n") + 1 :], context_tokens)
    return [*context, *ids[len(ids) - (max_prefix - len(context)) :]] if context else None


def encode_context(
    tokenizer,
    bos_id: int,
    prefix: str,
    suffix: str,
    max_prefix: int,
    suffix_tokens: int,
    heal: bool = True,
    context_tokens: int = 0,
) -> EncodedContext:
    """Token ids for the prefix (at most `max_prefix`) and the suffix head.

    When the cursor sits inside a word, the last prefix token is taken back and its text
    becomes `healed`: the model then chooses a token that continues the word, instead of
    being stuck after a token boundary that a whole word would never have.

    With `context_tokens`, a prefix that does not fit gives up to that many of its tokens to
    lines from further up that share identifiers with the cursor's line (`context.py`).
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
        related = _with_context(tokenizer, prefix, start, ids, max_prefix, context_tokens) if context_tokens else None
        drop = -(-overflow // WINDOW_ALIGN) * WINDOW_ALIGN
        ids = related or ids[min(drop, len(ids) - 1) :]
    suffix_ids = tokenizer.encode(suffix[: suffix_tokens * CHARS_PER_TOKEN_BOUND], add_special_tokens=False)
    return EncodedContext(ids, healed, suffix_ids[:suffix_tokens])


def encode_for(loaded, prefix: str, suffix: str, heal: bool = True) -> EncodedContext:
    """`encode_context` with a loaded checkpoint's tokenizer, BOS and sizes: a diffusion checkpoint's
    (engine.loading.LoadedModel) or the baseline's, which both carry `tokenizer`, `ids.bos` and
    `spec.max_prefix`, `spec.suffix_head`, `spec.context_tokens`."""
    spec = loaded.spec
    return encode_context(
        loaded.tokenizer,
        loaded.ids.bos,
        prefix,
        suffix,
        spec.max_prefix,
        spec.suffix_head,
        heal=heal,
        context_tokens=spec.context_tokens,
    )


@lru_cache(maxsize=4)
def _token_texts(tokenizer) -> tuple[str, ...]:
    return tuple(tokenizer.decode([i]) for i in range(len(tokenizer)))


def healing_candidates(tokenizer, healed: str) -> list[int]:
    """Token ids whose text starts with `healed`: the first token of a healed insertion."""
    return [i for i, text in enumerate(_token_texts(tokenizer)) if text.startswith(healed)]
