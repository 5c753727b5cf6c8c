"""Answers without a model step: the same context asked again, or a shown suggestion typed along.

Editors ask again for a context they asked before (an undo, the cursor moved away and
back), and a user who types the beginning of the suggestion shown expects the rest to stay
(Tabby keeps such a cache for the same reason). The last few final completions are kept
by their context; a request whose context is one of them gets its completion back, and a
request that types along a shown one (diffusion_infill.lsp.completion.typed_along) gets the rest of it.
The cache is the caller's (the server keeps one): the engine keeps nothing between requests.
"""

from __future__ import annotations

from dataclasses import dataclass

from diffusion_infill.engine.completion.confidence import clears_gate
from diffusion_infill.engine.lru import Lru
from diffusion_infill.engine.requests import MODEL, TYPED_ALONG, InfillRequest
from diffusion_infill.lsp.completion import typed_along

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

    def lookup(self, request: InfillRequest, threshold: float) -> Suggestion | None:
        """The completion kept for this very context (shown or not: it is the engine's answer), else the
        rest of the latest kept completion that clears `threshold` and that the user has typed along
        since; None when neither exists."""
        # a look that leaves the order alone: typing along follows the completions stored last
        exact = self._entries.peek((request.prefix, request.suffix, request.language))
        if exact is not None:
            return exact
        return self.typed_along(request, threshold)

    def typed_along(self, request: InfillRequest, threshold: float | None = None) -> Suggestion | None:
        """The rest of the latest kept completion typed along at `request` that clears `threshold`
        (None: shown or not, as a warm start wants it)."""
        for context, kept in self._entries.newest_first():
            if threshold is not None and not clears_gate(kept.confidence, threshold):
                continue
            if (left := typed_along.rest(_request(context), kept.text, request)) is not None:
                return Suggestion(left, kept.confidence, TYPED_ALONG, kept.steps)
        return None
