"""Who asked for a completion (the Trigger: the user, or the editor while the user types), and where an
as-you-type request is worth a completion run.

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

import enum

from lsprotocol.types import InlineCompletionTriggerKind


class Trigger(enum.StrEnum):
    """Who asked; its value is the accept command's argument and the telemetry's key."""

    INVOKED = "invoked"  # the user asked: several items, no gate
    AUTOMATIC = "automatic"  # asked while typing: one item, gated, quiet characters run nothing

    @classmethod
    def of(cls, kind: InlineCompletionTriggerKind) -> Trigger:
        return cls.INVOKED if kind == InlineCompletionTriggerKind.Invoked else cls.AUTOMATIC

    @classmethod
    def named(cls, value: str) -> Trigger | None:
        """The trigger a client's accept command names; None for anything else."""
        return next((trigger for trigger in cls if trigger.value == value), None)


def quiet(prefix: str, quiet_after: str) -> bool:
    """Whether an Automatic request at the end of `prefix` is better not run."""
    return bool(prefix) and prefix[-1] in quiet_after
