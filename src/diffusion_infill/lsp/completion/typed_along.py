"""Whether a context is being typed along: the one rule, for every caller.

A completion offered at one context is typed along at a later one when the user typed its
beginning and nothing else: the same language, the same text after the cursor, the text
before it grown by a beginning of the completion, and some of the completion left. The
document is then what it would be had the user accepted the completion, so its rest keeps
closure as the whole did. The suggestion cache answers with that rest
(diffusion_infill.lsp.completion.suggestion_cache) and a run warm-starts from it; nothing else decides it.
"""

from __future__ import annotations

from diffusion_infill.engine.requests import InfillRequest


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
