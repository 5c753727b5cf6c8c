"""codeAction/resolve: a client that resolves edits lazily gets the actions at once, without
edits, and the repair runs when the user picks one; an edit is never returned for a
document version other than the one the action was offered for.

Through the real server on the embedded model, except where the order of events must be
controlled: there the server's handlers run against an engine that finishes a job only
when the test says so.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from lsprotocol import types
from processes import appears, running, workers
from pygls.exceptions import JsonRpcException

from diffusion_infill.bench.big import broken_json_line
from diffusion_infill.engine.repair.fixes import FixResult
from diffusion_infill.lsp.fixes import actions
from diffusion_infill.lsp.fixes.results import FixResults
from diffusion_infill.lsp.text.documents import Documents
from tests.lsp.action_client import (
    FIX_JSON,
    action_capabilities,
    applied,
    code_actions,
    open_diagnosed,
    start_for_actions,
    titled,
)
from tests.lsp.lsp_client import Editor, stop

pytestmark = pytest.mark.asyncio(loop_scope="module")
LAZY = {"resolve": True, "disabled": True}  # as VS Code: edits resolved lazily, disabled actions shown
REQUEST_FAILED, INVALID_PARAMS = -32803, -32602
BROKEN = '{\n  name: \'demo\',\n  "tags": ["a", "b",]\n'


@pytest.fixture(scope="module")
async def session(model_dir, tmp_path_factory):
    client = await start_for_actions(model_dir, tmp_path_factory.mktemp("t") / "a.json", **LAZY)
    yield client
    await stop(client)


@pytest.fixture
def editor(session) -> Editor:
    return Editor(session)


async def resolve(editor: Editor, action: types.CodeAction) -> types.CodeAction:
    return await editor.client.code_action_resolve_async(action)


async def offered_fix(editor: Editor, text: str) -> tuple[str, types.CodeAction]:
    """A JSON document with its diagnostics' Fix JSON action, as first offered."""
    uri, diagnostics = await open_diagnosed(editor, text, "json", ".json")
    return uri, titled(await code_actions(editor, uri, diagnostics[0].range, diagnostics), FIX_JSON)


async def test_resolve_is_advertised(session):
    assert session.initialize_result.capabilities.code_action_provider.resolve_provider is True


async def test_actions_come_without_edits_and_resolve_computes_the_edit(editor):
    uri, action = await offered_fix(editor, BROKEN)
    assert action.edit is None and action.disabled is None
    assert action.data["uri"] == uri and action.data["version"] == 1 and action.data["action"] == "json"
    resolved = await resolve(editor, action)
    fixed, _ = applied(BROKEN, resolved, uri)
    assert json.loads(fixed) == {"name": "demo", "tags": ["a", "b"]}


async def test_an_action_already_resolved_for_this_version_is_offered_with_its_edit(editor):
    uri, action = await offered_fix(editor, BROKEN)
    resolved = await resolve(editor, action)
    again = titled(await code_actions(editor, uri, action.diagnostics[0].range, action.diagnostics), FIX_JSON)
    assert again.data is None and again.edit == resolved.edit


async def test_resolving_after_an_edit_fails_instead_of_returning_a_stale_edit(editor):
    uri, action = await offered_fix(editor, BROKEN)
    editor.insert(uri, types.Position(0, 1), " ")  # version 2, handled before the resolve request
    with pytest.raises(JsonRpcException) as failure:
        await resolve(editor, action)
    assert failure.value.code == REQUEST_FAILED and "changed" in failure.value.message


async def test_resolving_after_the_document_closed_fails(editor):
    uri, action = await offered_fix(editor, BROKEN)
    editor.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    with pytest.raises(JsonRpcException) as failure:
        await resolve(editor, action)
    assert failure.value.code == REQUEST_FAILED and "closed" in failure.value.message


async def test_a_document_reopened_at_version_1_is_not_offered_the_old_texts_fix(editor):
    uri, action = await offered_fix(editor, BROKEN)
    await resolve(editor, action)  # kept for this URI at version 1
    editor.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
    other = BROKEN.replace("demo", "test")  # the same length: the same whole-document target
    editor.client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "json", 1, other)))
    again = titled(await code_actions(editor, uri, action.diagnostics[0].range, action.diagnostics), FIX_JSON)
    fixed, _ = applied(other, again if again.edit is not None else await resolve(editor, again), uri)
    assert json.loads(fixed) == {"name": "test", "tags": ["a", "b"]}


def _two(found: set[int]) -> set[int] | None:
    return found if len(found) == 2 else None


async def test_fix_json_runs_apart_so_a_completion_is_answered_meanwhile_and_an_edit_kills_it(editor):
    """Fix JSON of a large one-line file runs in the repairs process, not on the engine thread: a completion
    elsewhere is answered while it runs; an edit of the document kills it, and resolve fails."""
    server = editor.client._server.pid
    text = broken_json_line(5_000_000, damage_every=50)
    uri, action = await offered_fix(editor, text)  # its diagnostics process runs from here on
    resolving = asyncio.ensure_future(resolve(editor, action))
    both = await appears(lambda: _two(workers(server)), 60)
    assert both, "no repairs process beside the diagnostics one"
    # Both processes are held still while the completion is asked: however fast the repair (its
    # process is warm after the tests before), it cannot end first, and the completion needs neither.
    for pid in both:
        os.kill(pid, signal.SIGSTOP)
    try:
        python = editor.open("def add(a, b):\n    return ", "python", ".py")
        await editor.request(python, types.Position(1, 11), invoked=True)
        assert not resolving.done()  # the completion did not wait for the fix
    finally:
        for pid in both:
            os.kill(pid, signal.SIGCONT)
    editor.insert(uri, types.Position(0, 1), " ")
    with pytest.raises(JsonRpcException) as failure:
        await resolving
    assert failure.value.code == REQUEST_FAILED and "changed" in failure.value.message
    # the diagnostics process is only asked to stop: the one that ends is the repairs process
    assert await appears(lambda: [pid for pid in both if not running(pid)], 30)


async def test_no_valid_fix_fails_to_resolve_with_the_reason_then_is_offered_disabled(editor):
    # Punctuation with no value in it, too long for a repair canvas: no candidate can be valid.
    records = "\n".join([": , ] :: ,"] * 200)
    uri, action = await offered_fix(editor, records)
    with pytest.raises(JsonRpcException) as failure:
        await resolve(editor, action)
    assert failure.value.code == REQUEST_FAILED and "not JSON" in failure.value.message
    again = titled(await code_actions(editor, uri, action.diagnostics[0].range, action.diagnostics), FIX_JSON)
    assert again.edit is None and "not JSON" in again.disabled.reason
    assert editor.texts[uri] == records


async def test_an_action_that_is_not_ours_is_invalid_params(editor):
    with pytest.raises(JsonRpcException) as failure:
        await resolve(editor, types.CodeAction(title=FIX_JSON, data={"uri": "file:///x.json"}))
    assert failure.value.code == INVALID_PARAMS


class HeldEngine:
    """An engine worker whose jobs finish only when the test finishes them."""

    def __init__(self):
        self.jobs: list[Future] = []

    def fix(self, action) -> Future:
        self.jobs.append(Future())
        return self.jobs[-1]


def held_server(text: str) -> SimpleNamespace:
    """What the code action handlers use of the server, with a held engine and one open JSON document."""
    server = SimpleNamespace(
        documents=Documents(),
        encoding="utf-16",
        fixes=FixResults(),
        client_capabilities=action_capabilities(**LAZY),
        worker=HeldEngine(),
    )
    server.documents.open("file:///held.json", "json", 1, text)
    return server


def request(text: str) -> types.CodeActionParams:
    end = types.Position(0, len(text))
    return types.CodeActionParams(
        text_document=types.TextDocumentIdentifier("file:///held.json"),
        range=types.Range(types.Position(0, 0), end),
        context=types.CodeActionContext(diagnostics=[]),
    )


async def test_the_code_action_answer_gives_the_engine_no_work():
    server = held_server("[1, 2,")
    answering = asyncio.ensure_future(actions.code_actions(server, request("[1, 2,")))
    await asyncio.sleep(0)  # one turn of the loop: enough for a handler that waits on nothing
    assert answering.done() and server.worker.jobs == []
    assert all(action.edit is None and action.data for action in answering.result())


async def test_an_edit_while_the_models_repair_runs_makes_resolve_fail():
    server = held_server("[1, 2,")
    [_, regenerate] = await actions.code_actions(server, request("[1, 2,"))
    resolving = asyncio.ensure_future(actions.resolve(server, regenerate))
    await asyncio.sleep(0)  # one turn of the loop: the handler hands the repair to the engine
    assert len(server.worker.jobs) == 1
    server.documents.change("file:///held.json", 2, [types.TextDocumentContentChangeWholeDocument("[1, 2]")], "utf-16")
    server.worker.jobs[0].set_result(FixResult("[1, 2]", True))
    with pytest.raises(actions.RequestFailed, match="changed"):
        await resolving
