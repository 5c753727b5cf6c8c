"""Answers without a model step: the same context asked again, or a shown suggestion typed along.

Editors ask again for a context they asked before (an undo, the cursor moved away and
back), and a user who types the beginning of the suggestion shown expects the rest to stay
(Tabby keeps such a cache for the same reason). The last few final completions are kept
by their context; a request whose context is one of them gets its completion back, and a
request that types along a shown one gets the rest of it.
The cache is the caller's (the server keeps one): the engine keeps nothing between requests.

Whether a context is being typed along is one rule (`rest`), for every caller: a completion offered at one
context is typed along at a later one when the user typed its beginning and nothing else: the same language,
the same text after the cursor, the text before it grown by a beginning of the completion, and some of the
completion left. The document is then what it would be had the user accepted the completion, so its rest
keeps closure as the whole did. The cache answers with that rest and a run warm-starts from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from diffusion_infill.engine.lru import Lru
from diffusion_infill.engine.requests import MODEL, TYPED_ALONG, InfillRequest
from diffusion_infill.lsp.completion.policy import OPEN, Gate

CACHE_SIZE = 32  # contexts kept, across documents


@dataclass(frozen=True)
class Suggestion:
    text: str
    confidence: float | None  # the estimate the engine gave the whole completion
    source: str = MODEL  # engine.requests.SOURCES: a model's completion, a document draft, or a rest typed along
    steps: int = 0  # decoder steps of the run that wrote it (0: no model step wrote it, a document draft)


Context = tuple[str, str, str | None]  # prefix, suffix, language


def _request(context: Context) -> InfillRequest:
    return InfillRequest(*context)


class SuggestionCache:
    def __init__(self, size: int = CACHE_SIZE):
        self._entries: Lru[Context, Suggestion] = Lru(size)

    def store(self, request: InfillRequest, suggestion: Suggestion) -> None:
        self._entries.put((request.prefix, request.suffix, request.language), suggestion)

    def clear(self) -> None:
        self._entries.clear()

    def lookup(self, request: InfillRequest, gate: Gate) -> Suggestion | None:
        """The completion kept for this very context (shown or not: it is the engine's answer), else the
        rest of the latest kept completion that passes `gate` and that the user has typed along
        since; None when neither exists."""
        # a look that leaves the order alone: typing along follows the completions stored last
        exact = self._entries.peek((request.prefix, request.suffix, request.language))
        if exact is not None:
            return exact
        return self.typed_along(request, gate)

    def typed_along(self, request: InfillRequest, gate: Gate = OPEN) -> Suggestion | None:
        """The rest of the latest kept completion typed along at `request` that passes `gate` (OPEN: shown or
        not, as a warm start wants it)."""
        for context, kept in self._entries.newest_first():
            if not gate.passes(kept.confidence):
                continue
            if (left := rest(_request(context), kept.text, request)) is not None:
                return Suggestion(left, kept.confidence, TYPED_ALONG, kept.steps)
        return None


def rest(offered_at: InfillRequest, completion: str, now: InfillRequest) -> str | None:
    """What is left of `completion` (offered at `offered_at`) when `now` is its context with a
    beginning of it typed; None when `now` is not, or when nothing of it is left."""
    if now.suffix != offered_at.suffix or now.language != offered_at.language:
        return None
    if not now.prefix.startswith(offered_at.prefix):
        return None
    typed = now.prefix[len(offered_at.prefix) :]
    if not completion.startswith(typed) or len(completion) == len(typed):
        return None
    return completion[len(typed) :]
