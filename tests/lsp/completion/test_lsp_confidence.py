"""Confidence gating and answers without a model step, through the real server process.

The checkpoint is a copy of the embedded model with a calibration that estimates every
completion at exactly 0.5 and comes with the threshold 0.6, so what is offered depends on
`minConfidence` alone and not on what the young model writes.

One context gets one sample and one gate decision, whichever request asks first: Neovim's own
automatic request and the plugin's are the same request, and the trigger key's (Invoked) keeps
the suggestion already computed. A run publishes exactly one final draft, so counting final
drafts counts the runs that finished."""

from __future__ import annotations

import shutil

import pytest
from commands import serve_command
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from diffusion_infill.engine.completion.confidence import Calibration
from diffusion_infill.engine.training.probes import held_out_line_cases
from tests.lsp.lsp_client import Editor, apply, capabilities, start, stop

pytestmark = pytest.mark.asyncio(loop_scope="module")

OPTIONS = {"diffusionInfill": {"maxSteps": 6, "minConfidence": 0.4, "mode": "single-line", "documentDrafts": False}}
CASES, SEED = 12, 11
REQUEST_CANCELLED = -32800


@pytest.fixture(scope="module")
async def session(model_dir, tmp_path_factory):
    model = tmp_path_factory.mktemp("calibrated") / "model"
    shutil.copytree(model_dir, model)
    Calibration({}, 0.0, 0.6, "every completion: 0.5").save(model)
    client, _ = await start(
        serve_command(model, tmp_path_factory.mktemp("t") / "t.json"), capabilities(["utf-16"]), OPTIONS
    )
    yield client
    await stop(client)


def final_step(session, uri: str, version: int) -> int:
    [final] = [d for d in session.drafts.of(uri, version) if d.final]
    return final.step


def configure(session, min_confidence: float | None) -> None:
    """minConfidence for the next requests; None: the checkpoint's 0.6, which withholds every completion."""
    session.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"diffusionInfill": {**OPTIONS["diffusionInfill"], "minConfidence": min_confidence}}
        )
    )


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
    configure(session, None)
    offered = 0
    for case in held_out_line_cases(CASES, seed=SEED + 1):
        uri = editor.open(case.prefix + case.suffix)
        position = editor.end_of(uri, case.prefix)
        assert await editor.request(uri, position) == []
        [final] = [d for d in session.drafts.of(uri, 1) if d.final]
        assert final.text == ""  # the client stops showing the draft
        offered += len(await editor.request(uri, position, invoked=True))
    assert offered > 0, "no invoked request offered anything"


@pytest.mark.parametrize("min_confidence", [0.4, None], ids=["offered", "withheld"])
async def test_a_request_for_a_context_being_computed_or_done_joins_its_run(session, min_confidence):
    configure(session, min_confidence)
    editor = Editor(session)
    for case in held_out_line_cases(3, seed=SEED + 2):
        uri = editor.open(case.prefix + case.suffix)
        position = editor.end_of(uri, case.prefix)
        first = editor.request(uri, position, msg_id=f"first {uri}")
        joined = editor.request(uri, position)  # the same context while the first one's run is in progress
        session.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=f"first {uri}"))
        answer = await joined  # the run went on: another request was waiting on it
        try:
            assert await first == answer  # answered before its cancel arrived
        except JsonRpcException as error:
            assert error.code == REQUEST_CANCELLED
        assert await editor.request(uri, position) == answer  # done: its answer again
        drafts = session.drafts.of(uri, 1)
        assert [d.step for d in drafts] == sorted(d.step for d in drafts), "a second run restarted the steps"
        [final] = [d for d in drafts if d.final]  # one run, one gate decision
        assert bool(final.text) == bool(answer)
        if min_confidence is None:
            assert answer == []


async def test_the_trigger_key_keeps_the_suggestion_of_its_context(session):
    configure(session, 0.4)
    editor = Editor(session)
    uri, prefix, item = await first_suggestion(editor)
    # In another document with the same text: the suggestion cache keeps completions by context, not document.
    triggered = editor.open(editor.texts[uri])
    invoked = await editor.request(triggered, editor.end_of(triggered, prefix), invoked=True)
    assert (invoked[0].insert_text, invoked[0].range) == (item.insert_text, item.range)  # then the others
    assert final_step(session, triggered, 1) == 0  # the first item was not computed again
    again = editor.open(editor.texts[uri])  # asked automatically again (an undo, the cursor back)
    assert await editor.request(again, editor.end_of(again, prefix)) == [item]
    assert final_step(session, again, 1) == 0  # no run


async def test_an_automatic_request_after_the_trigger_key_gets_its_first_item(session):
    configure(session, 0.4)
    editor = Editor(session)
    for case in held_out_line_cases(CASES, seed=SEED + 3):
        uri = editor.open(case.prefix + case.suffix)
        position = editor.end_of(uri, case.prefix)
        invoked = await editor.request(uri, position, invoked=True)
        if invoked:
            break
    else:
        pytest.fail(f"none of {CASES} held-out cases got an invoked item")
    again = editor.open(editor.texts[uri])
    [item] = await editor.request(again, position)
    assert (item.insert_text, item.range) == (invoked[0].insert_text, invoked[0].range)
    assert final_step(session, again, 1) == 0
