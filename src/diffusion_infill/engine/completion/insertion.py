"""From generated tokens to the text inserted at the cursor, for every engine that has
token ids: the healed text (already in the prefix) removed, one line when only one is
wanted, and the final cut that keeps closure."""

from __future__ import annotations

from diffusion_infill.engine import syntax_check
from diffusion_infill.engine.requests import InfillRequest


def insertion_text(tokenizer, tokens: list[int], healed: str, one_line: bool) -> str:
    """`tokens` as the text inserted at the cursor: without the healed text, cut to its first line
    when only one is wanted (EngineSettings.multi_line)."""
    text = tokenizer.decode(tokens)
    if healed:
        text = text[len(healed) :] if text.startswith(healed) else ""
    return text.split("\n", 1)[0] if one_line else text


def longest_valid(tokenizer, tokens: list[int], healed: str, one_line: bool, request: InfillRequest) -> str:
    """The longest insertion cut at a token boundary that keeps closure ("" always does)."""
    cuts = (insertion_text(tokenizer, tokens[:count], healed, one_line) for count in range(len(tokens), 0, -1))
    return syntax_check.first_valid(request.prefix, cuts, request.suffix, request.language)
