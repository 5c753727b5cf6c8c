"""diffusion_infill.lsp.completion.policy: one request policy from the settings and the model's facts (its calibration,
whether it judges copied lines), the one place where who answers from copied lines, the quiet characters
and the gate are decided."""

from __future__ import annotations

from diffusion_infill.engine.completion.confidence import Calibration
from diffusion_infill.lsp.completion.policy import OPEN, DocumentDrafts, Gate, RequestPolicy, RequestTerms
from diffusion_infill.lsp.completion.triggers import Trigger
from diffusion_infill.lsp.settings import ServerSettings

CALIBRATED = Calibration({}, 0.0, threshold=0.6, quiet_after=" :")
DEFAULTS = ServerSettings()  # minConfidence and quietAfter null: the checkpoint's own; documentDrafts on


def test_null_settings_take_the_checkpoints_gate_and_quiet_characters():
    policy = RequestPolicy.of(DEFAULTS, CALIBRATED, judges_lines=False)
    assert (policy.gate, policy.quiet_after, policy.calibrated) == (Gate(0.6), " :", True)


def test_without_a_calibration_everything_is_offered_and_no_character_is_quiet():
    policy = RequestPolicy.of(DEFAULTS, None, judges_lines=False)
    assert (policy.gate, policy.quiet_after, policy.calibrated) == (OPEN, "", False)


def test_settings_override_the_checkpoints_values():
    settings = ServerSettings(min_confidence=0.2, quiet_after="")
    policy = RequestPolicy.of(settings, CALIBRATED, judges_lines=False)
    assert (policy.gate, policy.quiet_after) == (Gate(0.2), "")


def test_copied_lines_are_answered_by_the_engine_that_judges_them_else_by_the_server():
    assert RequestPolicy.of(DEFAULTS, None, judges_lines=True).document_drafts is DocumentDrafts.ENGINE
    assert RequestPolicy.of(DEFAULTS, None, judges_lines=False).document_drafts is DocumentDrafts.SERVER
    off = ServerSettings(document_drafts=False)
    assert RequestPolicy.of(off, None, judges_lines=True).document_drafts is DocumentDrafts.OFF


def test_the_user_asking_gets_every_completion_and_several_items_typing_gets_one_past_the_gate():
    policy = RequestPolicy.of(ServerSettings(invoked_items=4), CALIBRATED, judges_lines=False)
    assert (policy.samples(Trigger.INVOKED), policy.gate_for(Trigger.INVOKED)) == (4, OPEN)
    assert (policy.samples(Trigger.AUTOMATIC), policy.gate_for(Trigger.AUTOMATIC)) == (1, Gate(0.6))


def test_what_answers_without_a_run_is_told_the_same_decisions():
    server = RequestPolicy.of(DEFAULTS, CALIBRATED, judges_lines=False)
    assert server.terms(1, Trigger.AUTOMATIC) == RequestTerms(1, Gate(0.6), Trigger.AUTOMATIC, True, True, " :")
    engine = RequestPolicy.of(DEFAULTS, CALIBRATED, judges_lines=True)  # the engine drafts from copied lines
    assert engine.terms(3, Trigger.INVOKED) == RequestTerms(3, OPEN, Trigger.INVOKED, False, True, " :")


def test_the_gate_lets_through_what_has_no_estimate_and_what_reaches_its_threshold():
    assert Gate(0.9).passes(None) and Gate(0.9).passes(0.9) and not Gate(0.5).passes(0.3)
    assert OPEN.passes(0.0)
