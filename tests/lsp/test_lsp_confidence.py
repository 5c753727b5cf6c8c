"""Confidence gating and answers without a model step, through the real server process.

The checkpoint is a copy of the embedded model with a calibration that estimates every
completion at exactly 0.5 and comes with the threshold 0.6, so what is offered depends on
`minConfidence` alone and not on what the young model writes."""

from __future__ import annotations

import shutil

import pytest
from lsp_client import Editor, apply, capabilities, serve_command, start, stop
from lsprotocol import types

from engine.confidence import Calibration
from engine.training.probes import held_out_line_cases

pytestmark = pytest.mark.asyncio(loop_scope="module")

OPTIONS = {"diffusionInfill": {"maxSteps": 6, "minConfidence": 0.4, "mode": "single-line", "documentDrafts": False}}
CASES, SEED = 12, 11


@pytest.fixture(scope="module")
async def session(model_dir, tmp_path_factory):
    model = tmp_path_factory.mktemp("calibrated") / "model"
    shutil.copytree(model_dir, model)
    Calibration({}, 0.0, 0.6, "every completion: 0.5").save(model)
    client, _ = await start(serve_command(model, tmp_path_factory.mktemp("t") / "t.json"), capabilities(["utf-16"]),
                            OPTIONS)
    yield client
    await stop(client)


def final_step(session, uri: str, version: int) -> int:
    [final] = [d for d in session.drafts.of(uri, version) if d.final]
    return final.step


async def first_suggestion(editor: Editor) -> tuple[str, str, types.InlineCompletionItem]:
    """A held-out case whose automatic request is answered with an item of two characters or more."""
    for case in held_out_line_cases(CASES, seed=SEED):
        text = case.prefix + case.suffix
        uri = editor.open(text)
        [*items] = await editor.request(uri, editor.end_of(uri, case.prefix))
        if items and len(apply(text, items[0])) - len(text) >= 2:
            return uri, case.prefix, items[0]
    pytest.fail(f"none of {CASES} held-out cases got a suggestion of two characters")


async def test_typing_along_a_shown_suggestion_is_answered_without_a_model_step(session):
    editor = Editor(session)
    uri, prefix, item = await first_suggestion(editor)
    assert final_step(session, uri, 1) > 0  # the first answer came from the model
    suggestion = item.insert_text
    editor.insert(uri, editor.end_of(uri, prefix), suggestion[0])
    [rest] = await editor.request(uri, editor.end_of(uri, prefix + suggestion[0]))
    assert rest.insert_text == suggestion[1:]
    assert final_step(session, uri, 2) == 0


async def test_the_same_context_again_is_answered_from_the_cache(session):
    editor = Editor(session)
    uri, prefix, item = await first_suggestion(editor)
    again = editor.open(editor.texts[uri])  # another document, the same text and cursor
    assert await editor.request(again, editor.end_of(again, prefix)) == [item]
    assert final_step(session, again, 1) == 0


async def test_under_min_confidence_automatic_requests_offer_nothing_and_invoked_ones_still_do(session):
    editor = Editor(session)
    session.workspace_did_change_configuration(types.DidChangeConfigurationParams(  # null: the checkpoint's 0.6
        settings={"diffusionInfill": {**OPTIONS["diffusionInfill"], "minConfidence": None}}))
    offered = 0
    for case in held_out_line_cases(CASES, seed=SEED + 1):
        uri = editor.open(case.prefix + case.suffix)
        position = editor.end_of(uri, case.prefix)
        assert await editor.request(uri, position) == []
        [final] = [d for d in session.drafts.of(uri, 1) if d.final]
        assert final.text == ""  # the client stops showing the draft
        offered += len(await editor.request(uri, position, invoked=True))
    assert offered > 0, "no invoked request offered anything"
