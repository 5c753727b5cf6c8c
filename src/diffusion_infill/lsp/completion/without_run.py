"""Answers without a completion run: the one policy, applied by the server (and so measured by
`bench --replay`, which types through it; an explicit request in a fresh process, the CLI's
`complete`, always runs the model under it).

In order, for a request:
1. the suggestion cache (diffusion_infill.lsp.completion.suggestion_cache): the same context again gets the
   completion kept for it; a shown suggestion typed along (diffusion_infill.lsp.completion.suggestion_cache.rest)
   gets its rest;
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
The caller owns the memory (one `WithoutRun` per server): the engine keeps none between requests.
"""

from __future__ import annotations

from dataclasses import dataclass

from diffusion_infill.engine.completion import repeated_text
from diffusion_infill.engine.requests import DOCUMENT, InfillRequest
from diffusion_infill.lsp.completion import triggers
from diffusion_infill.lsp.completion.policy import Gate, RequestTerms
from diffusion_infill.lsp.completion.suggestion_cache import Suggestion, SuggestionCache
from diffusion_infill.lsp.completion.triggers import Trigger


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
