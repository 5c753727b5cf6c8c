"""Automatic requests answered without a completion run, through the real server process:
drafts from the document itself (diffusion_infill.engine.completion.repeated_text) and requests right after a
character that rarely starts an accepted completion (diffusion_infill.lsp.completion.triggers).

The checkpoint is a copy of the embedded model with a calibration that estimates every
completion at exactly 0.5 and comes with the threshold 0.6: by default the model's own
completions are never offered to an Automatic request, so whatever is offered is the
document's draft."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from commands import serve_command
from lsprotocol import types
from samples import BOX as CLASS
from samples import RESETTING as SEVERAL  # `self.items` is followed by ` = []` twice

from diffusion_infill.engine.completion.confidence import Calibration
from tests.lsp.lsp_client import Editor, apply, capabilities, start, stop

pytestmark = pytest.mark.asyncio(loop_scope="module")

OPTIONS = {
    "diffusionInfill": {"maxSteps": 4, "mode": "single-line", "documentDrafts": True, "quietAfter": None}
}  # the defaults, which lsp_client.start would turn off
QUIET = ' :),"'  # the checkpoint's quiet characters (its calibration); `.` left out
ONCE = CLASS + "        self.count"  # `self.count` is followed by ` = 0` once: estimated under 0.6


@pytest.fixture(scope="module")
async def session(model_dir, tmp_path_factory):
    model = tmp_path_factory.mktemp("calibrated") / "model"
    shutil.copytree(model_dir, model)
    Calibration({}, 0.0, 0.6, "every completion: 0.5", quiet_after=QUIET).save(model)
    client, _ = await start(
        serve_command(model, tmp_path_factory.mktemp("t") / "t.json"), capabilities(["utf-16"]), OPTIONS
    )
    editor = Editor(client)  # an invoked request waits for the model: its threshold is known from then on
    uri = editor.open("x = 1\n")
    await editor.request(uri, editor.end_of(uri, "x = "), invoked=True)
    yield client
    await stop(client)


def configure(session, **settings) -> None:
    session.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"diffusionInfill": {**OPTIONS["diffusionInfill"], **settings}})
    )


def final_step(session, uri: str) -> int:
    [final] = [d for d in session.drafts.of(uri, 1) if d.final]
    return final.step


async def test_an_automatic_request_gets_what_followed_the_same_tokens_earlier_without_a_model_step(session):
    editor = Editor(session)
    uri = editor.open(SEVERAL + "\n")
    [item] = await editor.request(uri, editor.end_of(uri, SEVERAL))
    assert item.insert_text == " = []"
    assert final_step(session, uri) == 0


async def test_a_draft_estimated_under_the_threshold_leaves_the_request_to_the_model(session):
    editor = Editor(session)
    uri = editor.open(ONCE + "\n")
    assert await editor.request(uri, editor.end_of(uri, ONCE)) == []  # the model's 0.5 is gated out too
    assert final_step(session, uri) > 0
    configure(session, minConfidence=0.5)  # the one-place draft's estimate (0.58) passes 0.5
    try:
        again = editor.open(ONCE + "\n")
        [item] = await editor.request(again, editor.end_of(again, ONCE))
        assert item.insert_text == " = 0" and final_step(session, again) == 0
    finally:
        configure(session)


async def test_invoked_requests_and_document_drafts_off_ask_the_model(session):
    editor = Editor(session)
    uri = editor.open(SEVERAL + "\n")
    await editor.request(uri, editor.end_of(uri, SEVERAL), invoked=True)
    assert final_step(session, uri) > 0
    configure(session, documentDrafts=False)
    try:
        off = editor.open(SEVERAL + "\n")
        assert await editor.request(off, editor.end_of(off, SEVERAL)) == []
        assert final_step(session, off) > 0
    finally:
        configure(session)


async def test_an_automatic_request_right_after_a_quiet_character_gets_nothing_and_runs_nothing(session):
    editor = Editor(session)
    text = "def area(width, height):\n    return width *\n"
    uri = editor.open(text)
    assert await editor.request(uri, editor.end_of(uri, "height):")) == []
    assert session.drafts.of(uri, 1) == []  # no run: not even a draft
    await editor.request(uri, editor.end_of(uri, "height):"), invoked=True)  # the user asked: the model runs
    assert final_step(session, uri) > 0


async def test_the_quiet_characters_are_the_checkpoints(session):
    editor = Editor(session)
    uri = editor.open("total = values.\n")
    await editor.request(uri, editor.end_of(uri, "values."))  # `.` is quiet for the embedded model, not this one
    assert final_step(session, uri) > 0


async def test_quiet_after_nothing_runs_the_model_after_any_character(session):
    configure(session, quietAfter="")
    try:
        editor = Editor(session)
        uri = editor.open("def area(width, height):\n")
        await editor.request(uri, editor.end_of(uri, "height):"))
        assert final_step(session, uri) > 0
    finally:
        configure(session)


async def test_a_draft_being_typed_along_keeps_its_rest_after_a_quiet_character(session):
    editor = Editor(session)
    text = "x = total(a, b)\ny = total(a, b)\nz = total(a\n"
    uri = editor.open(text)
    [item] = await editor.request(uri, editor.end_of(uri, "z = total(a"))  # two places agree: over 0.6
    assert item.insert_text == ", b)"
    editor.insert(uri, editor.end_of(uri, "z = total(a"), ",")
    [rest] = await editor.request(uri, editor.end_of(uri, "z = total(a,"))  # `,` is quiet; the rest stays
    assert rest.insert_text == " b)"


async def test_before_a_closer_the_editor_added_the_draft_is_offered_and_accepting_closes_once(session):
    editor = Editor(session)
    text = "x = total(a, b)\ny = total(a, b)\nz = total(a)\n"  # VS Code typed the last `)` itself
    uri = editor.open(text)
    [item] = await editor.request(uri, editor.end_of(uri, "z = total(a"))
    assert item.insert_text == ", b)" and item.range.end == editor.end_of(uri, "z = total(a)")  # covers the `)`
    assert apply(text, item).splitlines()[2] == "z = total(a, b)"
    assert final_step(session, uri) == 0  # the document's draft: no model step


async def test_an_uncalibrated_model_is_asked_instead_of_repeating_the_document(model_dir, tmp_path):
    model = tmp_path / "model"
    shutil.copytree(model_dir, model)
    (model / "confidence.json").unlink()  # like a real DiffusionGemma or a server's model: no estimates
    client, _ = await start(serve_command(model, tmp_path / "t.json"), capabilities(["utf-16"]), OPTIONS)
    try:
        editor = Editor(client)
        uri = editor.open(SEVERAL + "\n")
        await editor.request(uri, editor.end_of(uri, SEVERAL))
        assert final_step(client, uri) > 0
    finally:
        await stop(client)


def finals(session, uri: str) -> list:
    return [d for d in session.drafts.of(uri, 1) if d.final]


def info(item) -> tuple:
    return item.step, item.source, item.confidence


async def test_each_cycled_item_carries_its_own_info_whatever_its_source(session):
    """The final `infill/draft` lists each item's steps, ms, confidence and source in the answer's
    order. An item kept from the answer while typing keeps what that answer said: the steps of the
    run that wrote it (not 0), or the document's draft's 0; the trigger key's samples have their own."""
    editor = Editor(session)
    configure(session, minConfidence=0.4, documentDrafts=False)  # the model's 0.5 is shown while typing
    try:
        for line in ("    return width", "    area = width", "    total = width +"):
            text = f"def area(width, height):\n{line}\n"
            uri = editor.open(text)
            at = editor.end_of(uri, line)
            if await editor.request(uri, at):
                break
        [typed] = finals(session, uri)
        assert typed.step > 0 and [info(item) for item in typed.items] == [info(typed)]
        answer = await editor.request(uri, at, invoked=True)
        invoked = finals(session, uri)[-1]
        assert len(invoked.items) == len(answer) >= 2
        first, *samples = invoked.items
        assert info(first) == info(typed) and (invoked.step, invoked.source) == (0, "model")  # not computed again
        assert all(sample.source == "model" and sample.step > 0 and sample.ms >= first.ms for sample in samples)
        again = editor.open(text)  # the same context in another document: answered from memory
        await editor.request(again, at)
        [cached] = finals(session, again)
        assert cached.step == 0 and [info(item) for item in cached.items] == [info(typed)]
    finally:
        configure(session)
    uri = editor.open(SEVERAL + "\n")  # the document's draft while typing, then the trigger key
    await editor.request(uri, editor.end_of(uri, SEVERAL))
    await editor.request(uri, editor.end_of(uri, SEVERAL), invoked=True)
    drafted, invoked = finals(session, uri)
    assert [(item.step, item.source) for item in drafted.items] == [(0, "document")]
    first, *samples = invoked.items
    assert (first.step, first.source) == (0, "document") and samples
    assert all(sample.source == "model" and sample.step > 0 for sample in samples)


async def test_a_model_that_judges_copied_lines_gets_the_document_draft_to_judge_once_loaded(tmp_path):
    """checkpoints/revision judges lines copied from the code (revision.json); known once it is loaded, so the
    policy the server builds at the load's end leaves the document's draft to the engine: a run answers."""
    revision = Path(__file__).parents[3] / "checkpoints" / "revision"
    options = {"diffusionInfill": {**OPTIONS["diffusionInfill"], "minConfidence": 0, "quietAfter": ""}}
    client, _ = await start(serve_command(revision, tmp_path / "t.json"), capabilities(["utf-16"]), options)
    try:
        await asyncio.wait_for(client.statuses.first(lambda status: status.state == "ready"), 120)
        editor = Editor(client)
        uri = editor.open(SEVERAL + "\n")
        await editor.request(uri, editor.end_of(uri, SEVERAL))
        assert final_step(client, uri) > 0  # 0: the server answered with the draft itself, unjudged
    finally:
        await stop(client)
