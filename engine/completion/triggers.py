"""Where an as-you-type request is worth a completion run.

Right after some characters what the user types next is rarely what a completion offers:
on the tuning excerpts of the typing replay (bench.replay --tuning; docs/replay.md), no
suggestion shown after any of QUIET_AFTER was accepted, by either model, while every
accepted one followed a word character or a newline. An Automatic request there is
answered with nothing at once (lsp.runs): no run, no CPU, no wrong grey text. The user can
still ask (Invoked), and a suggestion being typed along still shows its rest.
"""

from __future__ import annotations

# Seen at least 5 times before an Automatic request on the tuning excerpts, with no accepted
# suggestion after it (a space: after indentation or between tokens).
QUIET_AFTER = " :),\"."


def quiet(prefix: str, quiet_after: str = QUIET_AFTER) -> bool:
    """Whether an Automatic request at the end of `prefix` is better not run."""
    return bool(prefix) and prefix[-1] in quiet_after
