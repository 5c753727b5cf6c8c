"""End to end through the real server process on the embedded model (utf-16 positions).

The embedded model is young, so nothing here asserts what it writes: only that answers
come, drafts stream before them and end where they end, and stale work is dropped. What
the server makes of an engine's answer (closure, selected entries, the columns it computes)
is checked where the answer is known: test_lsp_scripted.py.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from commands import serve_command
from lsprotocol import types
from processes import appears
from pygls.exceptions import JsonRpcException

from diffusion_infill.engine import syntax_check
from diffusion_infill.engine.training.probes import held_out_line_cases
from diffusion_infill.lsp.completion.telemetry import ACCEPT_COMMAND
from tests.lsp.lsp_client import Editor, apply, capabilities, final_of, send_raw, start, stop

pytestmark = pytest.mark.asyncio(loop_scope="module")

OPTIONS = {"diffusionInfill": {"maxSteps": 6, "invokedItems": 2}}  # few steps: the tests wait on many runs
INVALID_PARAMS, REQUEST_CANCELLED = -32602, -32800
ITEM_CASES, ITEM_SEED = 8, 7
CYCLE_CASES, CYCLE_SEED = 10, 8


@pytest.fixture(scope="module")
async def session(model_dir, tmp_path_factory):
    telemetry = tmp_path_factory.mktemp("telemetry") / "acceptance.json"
    client, result = await start(serve_command(model_dir, telemetry), capabilities(["utf-16"]), OPTIONS)
    client.telemetry_path, client.initialize_result = telemetry, result
    yield client
    await stop(client)


@pytest.fixture
def editor(session) -> Editor:
    return Editor(session)


def insertion(item: types.InlineCompletionItem, text: str, cursor_offset: int) -> str:
    """What accepting `item` inserts at the cursor (the covered closers are put back as they were)."""
    after = apply(text, item)
    assert after.startswith(text[:cursor_offset]) and after.endswith(text[cursor_offset:]), "item rewrote the context"
    return after[cursor_offset : len(after) - len(text) + cursor_offset]


async def test_initialize_advertises_inline_completion_and_loads_in_background(session):
    capabilities = session.initialize_result.capabilities
    assert capabilities.inline_completion_provider is not None
    assert capabilities.position_encoding == types.PositionEncodingKind.Utf16
    assert ACCEPT_COMMAND in capabilities.execute_command_provider.commands
    assert capabilities.text_document_sync.change == types.TextDocumentSyncKind.Incremental
    editor = Editor(session)
    uri = editor.open("x = 1\n")
    await editor.request(uri, types.Position(1, 0))  # answered once the model is loaded
    [reports] = session.progress_reports.values()
    assert [report.kind for report in reports] == ["begin", "end"]
    assert "ready" in reports[-1].message


async def test_items_are_returned_on_held_out_code(session, editor):
    """Mid-line cursors in stdlib files the model never saw: some of them get an item."""
    answered = 0
    for case in held_out_line_cases(ITEM_CASES, seed=ITEM_SEED):
        uri = editor.open(case.prefix + case.suffix)
        position = editor.end_of(uri, case.prefix)
        answer = await editor.request(uri, position, invoked=True)
        for item in answer:
            inserted = insertion(item, case.prefix + case.suffix, len(case.prefix))
            assert inserted and syntax_check.check(case.prefix, inserted, case.suffix, "python").valid
            assert item.range.start == position and item.command.command == ACCEPT_COMMAND
        answered += bool(answer)
    assert answered, f"none of {ITEM_CASES} held-out cursors got an item"


async def test_drafts_arrive_before_the_answer_and_converge_to_it(session, editor):
    for case in held_out_line_cases(ITEM_CASES, seed=ITEM_SEED):
        text = case.prefix + case.suffix
        uri = editor.open(text)
        position = editor.end_of(uri, case.prefix)
        answer = await editor.request(uri, position)
        drafts = session.drafts.of(uri, 1, position)
        assert drafts, "no draft before the answer"
        assert [d.step for d in drafts] == sorted(d.step for d in drafts)
        assert [d.final for d in drafts] == [False] * (len(drafts) - 1) + [True]
        steps = drafts[:-1]
        assert all(a.text != b.text for a, b in zip(steps, steps[1:], strict=False)), "an unchanged draft was resent"
        if drafts[-1].text:
            [item] = answer
            assert insertion(item, text, len(case.prefix)) == drafts[-1].text
            assert list(item.command.arguments) == ["automatic"]
        else:
            assert answer == []


async def test_invoked_offers_distinct_items_for_cycling(session, editor):
    """The trigger key's items are distinct samples: at more than half of ten held-out cursors there
    are two to cycle through (the young model is sure of one completion at some cursors)."""
    cycled = 0
    for case in held_out_line_cases(CYCLE_CASES, seed=CYCLE_SEED):
        text = case.prefix + case.suffix
        uri = editor.open(text)
        position = editor.end_of(uri, case.prefix)
        answer = await editor.request(uri, position, invoked=True)
        assert len(answer) <= OPTIONS["diffusionInfill"]["invokedItems"]
        inserted = [insertion(item, text, len(case.prefix)) for item in answer]
        assert len(set(inserted)) == len(inserted) and all(inserted)
        assert all(list(item.command.arguments) == ["invoked"] for item in answer)
        final = final_of(session, uri, 1, position)
        assert (final.text == inserted[0]) if answer else final.text == ""
        cycled += len(answer) >= 2
    assert cycled > CYCLE_CASES // 2, f"two items to cycle through at {cycled} of {CYCLE_CASES} cursors"


async def test_burst_of_typing_computes_only_the_latest_request(session, editor):
    uri = editor.open("total = 0\nfor n in range(10):\n    total += \n")
    requests, positions = [], []
    for column, typed in enumerate("n * 2", start=13):  # every keystroke: an edit, then an automatic request
        editor.insert(uri, types.Position(2, column), typed)
        positions.append(types.Position(2, column + 1))
        requests.append(editor.request(uri, positions[-1]))
    answers = await asyncio.gather(*requests)
    assert all(answer == [] for answer in answers[:-1]), "a superseded request got items"
    latest = editor.versions[uri]
    final_of(session, uri, latest, positions[-1])  # the latest one ran to the end
    for version in range(3, latest):  # queued behind the first: never started, so never drafted
        assert not session.drafts.of(uri, version), f"version {version} was computed"


async def test_an_edit_answers_the_running_request_empty(session, editor):
    text = "name = input()\nprint(\n"
    uri = editor.open(text)
    pending = editor.request(uri, editor.end_of(uri, "print("))
    editor.insert(uri, types.Position(2, 0), "# edited\n")
    assert await pending == []


async def test_cancel_request_stops_running_and_queued_runs(session, editor):
    first, second = editor.open("a = [1, 2, \n"), editor.open("b = {'k': \n")
    running = editor.request(first, types.Position(0, 11), msg_id="running")  # the worker is idle: it starts
    queued = editor.request(second, types.Position(0, 10), msg_id="queued")  # waits behind it
    for msg_id in ("running", "queued"):
        session.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
    for cancelled in (running, queued):
        with pytest.raises(JsonRpcException) as error:
            await cancelled
        assert error.value.code == REQUEST_CANCELLED
    after = editor.request(first, types.Position(1, 0))  # runs once the worker has left the cancelled ones
    await after
    final_of(session, first, 1, types.Position(1, 0))
    assert len(session.drafts.of(first, 1, types.Position(0, 11))) <= 1, "the run went on after the cancel"
    assert not session.drafts.of(second, 1), "a cancelled queued run was computed"


async def test_re_request_joins_the_live_run(session, editor):
    text = "class Point:\n    def __init__(self, x, y):\n        self.\n"
    uri = editor.open(text)
    position = editor.end_of(uri, "y):\n        self.")
    first, again = await asyncio.gather(editor.request(uri, position), editor.request(uri, position))
    assert first == again
    drafts = session.drafts.of(uri, 1, position)
    assert [d.step for d in drafts] == sorted(d.step for d in drafts), "a second run restarted the steps"
    assert sum(d.final for d in drafts) == 1
    assert await editor.request(uri, position) == first  # finished: the kept result, no new run
    assert session.drafts.of(uri, 1, position) == drafts


async def test_two_documents_at_once(session, editor):
    python = editor.open("import math\nradius = math.\n")
    data = editor.open('{"items": [1, 2, 3], "count": \n}\n', "json", ".json")
    at_python, at_data = editor.end_of(python, "radius = math."), editor.end_of(data, '"count": ')
    await asyncio.gather(editor.request(python, at_python), editor.request(data, at_data))
    final_of(session, python, 1, at_python)
    final_of(session, data, 1, at_data)


@pytest.mark.parametrize(
    ("name", "params"),
    [
        (
            "wrong types",
            {"textDocument": {"uri": 7}, "position": {"line": "x", "character": 0}, "context": {"triggerKind": 1}},
        ),
        (
            "missing context",
            {"textDocument": {"uri": "file:///project/open.py"}, "position": {"line": 0, "character": 0}},
        ),
        (
            "negative line",
            {
                "textDocument": {"uri": "file:///project/open.py"},
                "position": {"line": -1, "character": 0},
                "context": {"triggerKind": 2},
            },
        ),
        (
            "line out of range",
            {
                "textDocument": {"uri": "file:///project/open.py"},
                "position": {"line": 999, "character": 0},
                "context": {"triggerKind": 2},
            },
        ),
        (
            "unknown document",
            {
                "textDocument": {"uri": "file:///nowhere.py"},
                "position": {"line": 0, "character": 0},
                "context": {"triggerKind": 2},
            },
        ),
    ],
)
async def test_malformed_requests_get_an_error_and_the_server_keeps_serving(session, editor, name, params):
    uri = editor.open("x = 1\n")
    params = json.loads(json.dumps(params).replace("file:///project/open.py", uri))
    with pytest.raises(JsonRpcException) as error:
        await send_raw(session, types.TEXT_DOCUMENT_INLINE_COMPLETION, params, msg_id=f"malformed {name}")
    assert error.value.code == INVALID_PARAMS
    assert isinstance(await editor.request(uri, types.Position(1, 0)), list)


async def test_settings_change_languages_and_bad_values(session, editor):
    uri = editor.open("answer = \n")
    position = types.Position(0, 9)
    shown = session.protocol.wait_for_notification(types.WINDOW_SHOW_MESSAGE)  # waiting before it can come
    session.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"diffusionInfill": {"enabledLanguages": ["markdown"], "maxSteps": "many"}}
        )
    )
    message = await asyncio.wrap_future(shown)
    assert "maxSteps" in message.message and message.type == types.MessageType.Warning
    assert await editor.request(uri, position, invoked=True) == []
    assert not session.drafts.of(uri, 1), "a disabled language was computed"
    session.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=OPTIONS))
    await editor.request(uri, position, invoked=True)
    final_of(session, uri, 1, position)


def _accepted(path) -> int | None:
    try:
        return json.loads(path.read_text())["accepted"]
    except (OSError, ValueError):  # not written yet
        return None


async def test_accepting_an_item_is_counted_locally(session):
    before = json.loads(session.telemetry_path.read_text())["accepted"] if session.telemetry_path.exists() else 0
    await session.workspace_execute_command_async(
        types.ExecuteCommandParams(command=ACCEPT_COMMAND, arguments=["automatic"])
    )
    # written by the server's telemetry thread, not while it answers the command
    assert await appears(lambda: _accepted(session.telemetry_path) == before + 1, 30)
    counts = json.loads(session.telemetry_path.read_text())
    assert counts["by_trigger"]["automatic"]["accepted"] >= 1
    assert set(counts) == {"requests", "items", "accepted", "by_trigger"}  # counts only
    with pytest.raises(JsonRpcException):
        await session.workspace_execute_command_async(
            types.ExecuteCommandParams(command=ACCEPT_COMMAND, arguments=["file contents"])
        )
