"""Answers without a model step: the same context asked again, or a shown suggestion typed along.

Editors ask again for a context they asked before (an undo, the cursor moved away and
back), and a user who types the beginning of the suggestion shown expects the rest to stay
(Tabby keeps such a cache for the same reason). The last few final completions are kept
by their context; a request whose context is one of them gets its completion back, and a
request whose prefix is a kept prefix plus the beginning of its (shown) completion gets
the rest of it: the document text is then the same as if the suggestion had been
accepted, so the rest keeps closure as the whole did.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from engine.completion.confidence import passes
from engine.drafts import InfillRequest

CACHE_SIZE = 32  # contexts kept, across documents


@dataclass(frozen=True)
class Suggestion:
    text: str
    confidence: float | None  # the estimate the engine gave the whole completion


Context = tuple[str, str, str | None]  # prefix, suffix, language


class SuggestionCache:
    def __init__(self, size: int = CACHE_SIZE):
        self.size = size
        self._entries: OrderedDict[Context, Suggestion] = OrderedDict()

    def store(self, request: InfillRequest, suggestion: Suggestion) -> None:
        key = (request.prefix, request.suffix, request.language)
        self._entries[key] = suggestion
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def clear(self) -> None:
        self._entries.clear()

    def lookup(self, request: InfillRequest, threshold: float) -> Suggestion | None:
        """The completion kept for this very context (shown or not: it is the engine's answer), else the
        rest of the latest kept completion that passes `threshold` and that the user has typed the
        beginning of since; None when neither exists."""
        exact = self._entries.get((request.prefix, request.suffix, request.language))
        if exact is not None:
            return exact
        for (prefix, suffix, language), kept in reversed(self._entries.items()):
            if suffix != request.suffix or language != request.language or not passes(kept.confidence, threshold):
                continue
            if len(request.prefix) <= len(prefix) or not request.prefix.startswith(prefix):
                continue
            typed = request.prefix[len(prefix):]
            if kept.text.startswith(typed) and len(kept.text) > len(typed):
                return Suggestion(kept.text[len(typed):], kept.confidence)
        return None
