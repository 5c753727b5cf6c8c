"""The request policy: who answers an inline completion request from lines copied from the code, after
which characters an as-you-type request runs nothing, and what confidence an offered completion needs.

Each of these depends on a setting and on the model: its calibration (the threshold and the quiet
characters chosen with it; known from the file beside a local checkpoint's weights while they load) and
whether it judges copied lines itself (known once loaded). One frozen RequestPolicy is built from both
at each settings change and at each model load's start and end (lsp.model_lifecycle), kept by the runs
(lsp.completion.runs.Runs.adopt), and every decision reads it: the inlineCompletion handler (which
documents a request carries), lsp.completion.runs (what answers without a run, the gate after a run).
The gate itself is one rule, `Gate.passes`, which every answer goes through: a run's completions, a kept one
answered again, a rest typed along, a document draft.
The engine's own permission to copy lines is the same `documentDrafts` setting (EngineSettings.document_drafts,
given at load time): whether it answers from them is its judge's (engine.completion.judge), and the
autoregressive baseline uses them only to decode faster (prompt lookup).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from diffusion_infill.engine.completion.confidence import Calibration, gate_threshold
from diffusion_infill.lsp.completion.triggers import Trigger
from diffusion_infill.lsp.settings import ServerSettings


class DocumentDrafts(enum.Enum):
    """Who answers a request from lines copied from the code."""

    OFF = "off"  # the documentDrafts setting is off: no one
    SERVER = "server"  # the server, with the document's draft (lsp.completion.without_run), unjudged
    ENGINE = "engine"  # the engine, which copies lines from this and the other open documents and judges them


@dataclass(frozen=True)
class Gate:
    """The confidence a completion needs to be offered."""

    threshold: float = 0.0  # 0: every completion (confidences are chances, in [0, 1])

    def passes(self, confidence: float | None) -> bool:
        """Whether a completion with this estimate is offered; one without an estimate always is."""
        return confidence is None or confidence >= self.threshold


OPEN = Gate()  # the user asked: every completion is offered


@dataclass(frozen=True)
class RequestTerms:
    """What lsp.completion.without_run needs to know of a request besides its text."""

    samples: int = 1  # items wanted: 1 as-you-type, several when the user asks
    gate: Gate = OPEN  # what an offered completion needs
    trigger: Trigger = Trigger.INVOKED
    document_drafts: bool = False  # the document's draft may answer (the setting; not if the engine judges lines)
    calibrated: bool = False  # the model's completions have calibrated estimates
    quiet_after: str = ""  # characters after which an automatic request runs nothing


@dataclass(frozen=True)
class RequestPolicy:
    invoked_items: int = 3  # completions an Invoked request is offered, for cycling
    gate: Gate = OPEN  # what a completion offered to an Automatic request needs; Invoked: nothing (gate_for)
    quiet_after: str = ""  # characters after which an Automatic request runs nothing (lsp.completion.triggers)
    calibrated: bool = False  # the model's completions have calibrated estimates (a document draft needs them)
    document_drafts: DocumentDrafts = DocumentDrafts.OFF
    # Seconds an Automatic request's model run waits before it starts: a key typed meanwhile (its didChange)
    # cancels it before any step. Answers without a run (the cache, the document's draft) never wait, so
    # clients ask at every key and only model work is debounced (as llama.vim does: cache at once, server later).
    debounce_s: float = 0.075

    @classmethod
    def of(cls, settings: ServerSettings, calibration: Calibration | None, judges_lines: bool) -> RequestPolicy:
        """The policy of `settings` for a model with this calibration (None: none), judging copied lines or not."""
        quiet_after = settings.quiet_after
        if quiet_after is None:  # the setting's null: the characters calibrated with the checkpoint
            quiet_after = calibration.quiet_after if calibration is not None else ""
        copied = DocumentDrafts.OFF
        if settings.document_drafts:
            copied = DocumentDrafts.ENGINE if judges_lines else DocumentDrafts.SERVER
        return cls(
            settings.invoked_items,
            Gate(gate_threshold(settings.min_confidence, calibration)),
            quiet_after,
            calibration is not None,
            copied,
        )

    def run_delay(self, trigger: Trigger) -> float:
        """How long a model run waits before it starts: the user asked, at once; while typing, the debounce."""
        return self.debounce_s if trigger is Trigger.AUTOMATIC else 0.0

    def samples(self, trigger: Trigger) -> int:
        """How many completions a request is offered: one while typing, several when the user asks."""
        return 1 if trigger is Trigger.AUTOMATIC else self.invoked_items

    def gate_for(self, trigger: Trigger) -> Gate:
        """The user asked: every completion is offered; while typing only those likely to be accepted."""
        return self.gate if trigger is Trigger.AUTOMATIC else OPEN

    def terms(self, samples: int, trigger: Trigger) -> RequestTerms:
        """What lsp.completion.without_run needs to know of a request besides its text."""
        return RequestTerms(
            samples,
            self.gate_for(trigger),
            trigger,
            self.document_drafts is DocumentDrafts.SERVER,
            self.calibrated,
            self.quiet_after,
        )
