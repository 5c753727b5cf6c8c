"""What a completion is asked with and what it yields, whichever engine computes it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # diffusion_infill.engine.completion.sampler imports torch; requests stay importable without it
    from diffusion_infill.engine.completion.confidence import Evidence
    from diffusion_infill.engine.completion.sampler import PassCounts

MODES = ("auto", "single-line", "multi-line")  # how many lines an insertion may span (EngineSettings.mode)
# Where a final completion comes from: a model's run, the document's own draft
# (engine.completion.repeated_text), the rest of a shown one typed along (lsp.completion.without_run.rest),
# or a line copied from the code that the model judged and perhaps edited (engine.completion.judge)
MODEL, DOCUMENT, TYPED_ALONG, REVISED = "model", "document", "typed_along", "revised"
SOURCES = (MODEL, DOCUMENT, TYPED_ALONG, REVISED)


@dataclass(frozen=True)
class InfillRequest:
    prefix: str  # document text before the cursor
    suffix: str  # document text after the cursor
    language: str | None = None  # closure-check grammar ("python", "json", ...), None: brackets only
    invoked: bool = False  # asked for explicitly, not as-you-type: a remote engine waits longer
    others: tuple[str, ...] = ()  # text of other open documents of the language: lines to copy from
    # a line copied from the code may answer (engine.completion.judge); off for the later samples of
    # an Invoked request, which the model draws so that they differ from it
    document_drafts: bool = True


@dataclass(frozen=True)
class Draft:
    text: str  # the insertion as it stands
    step: int  # decoder forward passes so far
    mean_entropy: float
    final: bool
    valid: bool | None = None  # closure check, known for the final draft
    prefill_ms: float = 0.0  # time spent encoding the prefix for this request
    confidence: float | None = None  # final drafts: estimated chance of being accepted (engine.completion.confidence)
    evidence: Evidence | None = None  # final drafts: what that estimate was computed from
    source: str = MODEL  # SOURCES: where the text comes from
    passes: PassCounts | None = None  # final drafts of the diffusion engine: where its denoising passes went
    ms: float | None = None  # final drafts the server answers with: milliseconds from the request's run to this one
