"""Answers without a completion run, and the memory they come from: the one policy, applied by the server
(and so measured by `bench --replay`, which types through it; an explicit request in a fresh process, the
CLI's `complete`, always runs the model under it).

In order, for a request:
1. the suggestion cache (SuggestionCache): the same context again gets the completion kept for it; a shown
   suggestion typed along (`rest`) gets its rest;
2. the document's draft (diffusion_infill.engine.completion.repeated_text), for a single-item request that may
   have one, when its estimate clears the threshold and the model is calibrated: only then do
   the model's completions have estimates on the same scale, and an uncalibrated model (a real
   DiffusionGemma, a server's model) is taken to know better than a repetition;
3. a quiet request (as-you-type, right after a character that rarely starts an accepted
   completion, diffusion_infill.lsp.completion.triggers) gets nothing.
Otherwise the engine runs. A request for several items gets the kept completion first and the
engine samples only the others (the kept one stays the context's: one sample and one gate
decision per context, whichever request asks first); a single-item request runs with a warm
start from a completion typed along that was not shown, if there is one.

The suggestion cache: editors ask again for a context they asked before (an undo, the cursor moved away and
back), and a user who types the beginning of the suggestion shown expects the rest to stay (Tabby keeps such
a cache for the same reason). The last few final completions are kept by their context; a request whose
context is one of them gets its completion back, and a request that types along a shown one gets the rest.
Whether a context is being typed along is one rule (`rest`), for every caller: a completion offered at one
context is typed along at a later one when the user typed its beginning and nothing else: the same language,
the same text after the cursor, the text before it grown by a beginning of the completion, and some of the
completion left. The document is then what it would be had the user accepted the completion, so its rest
keeps closure as the whole did. The cache answers with that rest and a run warm-starts from it.
The caller owns the memory (one `WithoutRun` per server): the engine keeps none between requests.
"""

from __future__ import annotations

from dataclasses import dataclass

from diffusion_infill.engine.completion import repeated_text
from diffusion_infill.engine.lru import Lru
from diffusion_infill.engine.requests import DOCUMENT, MODEL, TYPED_ALONG, InfillRequest
from diffusion_infill.lsp.completion import triggers
from diffusion_infill.lsp.completion.policy import OPEN, Gate, RequestTerms
from diffusion_infill.lsp.completion.triggers import Trigger

CACHE_SIZE = 32  # contexts kept, across documents


@dataclass(frozen=True)
class Suggestion:
    text: str
    confidence: float | None  # the estimate the engine gave the whole completion
    source: str = MODEL  # engine.requests.SOURCES: a model's completion, a document draft, or a rest typed along
    steps: int = 0  # decoder steps of the run that wrote it (0: no model step wrote it, a document draft)


@dataclass(frozen=True)
class Answer:
    kept: Suggestion | None  # the first item, known without a run
    run: bool  # whether the engine samples: all items, or the ones after `kept`
    start_text: str | None = None  # the run's warm start: the rest of a completion typed along


class WithoutRun:
    """The policy, with the memory it answers from."""

    def __init__(self, cache: SuggestionCache | None = None):
        self.cache = cache or SuggestionCache()

    def answer(self, request: InfillRequest, terms: RequestTerms) -> Answer:
        kept = self.cache.lookup(request, terms.gate)
        if kept is None and terms.samples == 1 and self._drafts_apply(terms):
            kept = self._document_draft(request, terms.gate)
        if kept is not None:
            return Answer(kept, run=terms.samples > 1)
        if terms.trigger is Trigger.AUTOMATIC and triggers.quiet(request.prefix, terms.quiet_after):
            return Answer(None, run=False)
        warm = self.cache.typed_along(request)  # not shown, or the cache would have answered
        return Answer(None, run=True, start_text=warm.text if warm is not None else None)

    def remember(self, request: InfillRequest, suggestion: Suggestion) -> None:
        """A run's answer for `request`: the context's completion from now on."""
        self.cache.store(request, suggestion)

    def clear(self) -> None:
        self.cache.clear()

    @staticmethod
    def _drafts_apply(terms: RequestTerms) -> bool:
        return terms.trigger is Trigger.AUTOMATIC and terms.document_drafts and terms.calibrated

    def _document_draft(self, request: InfillRequest, gate: Gate) -> Suggestion | None:
        """The document's draft at the cursor when its estimate passes `gate`, kept for typing along."""
        draft = repeated_text.offer(request)
        if draft is None:
            return None
        found = Suggestion(draft.text, repeated_text.estimate(draft, request.prefix), DOCUMENT)
        if not gate.passes(found.confidence):
            return None
        self.cache.store(request, found)
        return found


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
