"""Where an as-you-type request is worth a completion run.

Right after some characters what the user types next is rarely what a completion offers:
on the tuning excerpts of the typing replay (diffusion_infill.bench.replay --tuning; docs/replay.md), no
suggestion shown after a space, `:`, `)`, `,`, `"` or `.` was accepted, by either embedded
model, while every accepted one followed a word character or a newline. Which characters
are quiet depends on the model, so they come with its calibration (`quiet_after` in the
checkpoint's confidence.json; a model without one has none), and the `quietAfter` setting
overrides them. An Automatic request there is answered with nothing at once (without_run.py): no
run, no CPU, no wrong grey text. The user can still ask (Invoked), and a suggestion being
typed along still shows its rest.
"""

from __future__ import annotations


def quiet(prefix: str, quiet_after: str) -> bool:
    """Whether an Automatic request at the end of `prefix` is better not run."""
    return bool(prefix) and prefix[-1] in quiet_after
