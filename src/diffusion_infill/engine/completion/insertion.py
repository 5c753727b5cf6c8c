"""From generated tokens to the text inserted at the cursor, for every engine that has
token ids: the healed text (already in the prefix) removed, one line when only one is
wanted, and the final cut that keeps closure."""

from __future__ import annotations

from diffusion_infill.engine import syntax_check
from diffusion_infill.engine.requests import InfillRequest
from diffusion_infill.engine.settings import EngineSettings


def insertion_text(tokenizer, tokens: list[int], healed: str, settings: EngineSettings, prefix: str) -> str:
    text = tokenizer.decode(tokens)
    if healed:
        text = text[len(healed) :] if text.startswith(healed) else ""
    return settings.shape(text, prefix)


def longest_valid(tokenizer, tokens: list[int], healed: str, settings: EngineSettings, request: InfillRequest) -> str:
    """The longest insertion cut at a token boundary that keeps closure ("" always does)."""
    cuts = (
        insertion_text(tokenizer, tokens[:count], healed, settings, request.prefix)
        for count in range(len(tokens), 0, -1)
    )
    return syntax_check.first_valid(request.prefix, cuts, request.suffix, request.language)
