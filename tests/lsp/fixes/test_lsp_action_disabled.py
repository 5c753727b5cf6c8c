"""A client that cannot show disabled actions (no `codeAction.disabledSupport`) is not sent
them, as the spec asks, but is still told why an action is missing: in a message when the
user asked for code actions, in its log when the editor asked by itself. Either way the
document is left as it is.
"""

from __future__ import annotations

import json

import pytest
from lsprotocol import types
from lsprotocol.converters import get_converter

from diffusion_infill.bench.big import broken_json_line
from diffusion_infill.lsp.fixes.actions import EAGER_MAX_CHARS
from diffusion_infill.lsp.fixes.edits import FIX_COMMAND
from tests.lsp.action_client import (
    FIX_JSON,
    applied,
    code_actions,
    open_diagnosed,
    start_for_actions,
    titled,
)
from tests.lsp.lsp_client import Editor, send_raw, stop

pytestmark = pytest.mark.asyncio(loop_scope="module")
INVOKED, AUTOMATIC = types.CodeActionTriggerKind.Invoked, types.CodeActionTriggerKind.Automatic
# Two top-level documents, too long for a repair canvas: no candidate can be valid.
UNFIXABLE = "\n".join([": , ] :: ,"] * 200)  # punctuation with no value, too long for a repair canvas
REASON = "Fix JSON selection: the selection is not JSON: there is no JSON value in it"


@pytest.fixture(scope="module")
async def session(model_dir, tmp_path_factory):
    client = await start_for_actions(model_dir, tmp_path_factory.mktemp("t") / "a.json", resolve=False, disabled=False)
    yield client
    await stop(client)


@pytest.fixture
def editor(session) -> Editor:
    session.messages.clear()
    session.log_messages.clear()
    return Editor(session)


def said(messages: list) -> list[str]:
    return [message.message for message in messages if message.message.startswith("diffusion-infill: ")]


async def test_asked_for_actions_with_no_valid_fix_the_user_is_shown_why(editor):
    uri, diagnostics = await open_diagnosed(editor, UNFIXABLE, "json", ".json")
    actions = await code_actions(editor, uri, diagnostics[0].range, diagnostics, trigger=INVOKED)
    assert not actions  # notifications come before the response, so the message is already here
    assert said(editor.client.messages) == [f"diffusion-infill: {REASON}"]
    assert editor.texts[uri] == UNFIXABLE


async def test_when_the_editor_asks_by_itself_the_reason_goes_to_its_log(editor):
    uri, diagnostics = await open_diagnosed(editor, UNFIXABLE, "json", ".json")
    for trigger in (AUTOMATIC, None):  # a client older than triggerKind: maybe at every cursor move too
        assert not await code_actions(editor, uri, diagnostics[0].range, diagnostics, trigger=trigger)
    assert said(editor.client.log_messages) == [f"diffusion-infill: {REASON}"] * 2
    assert said(editor.client.messages) == []


async def test_a_valid_fix_is_offered_as_usual_and_nothing_is_said(editor):
    uri, diagnostics = await open_diagnosed(editor, "[1, 2,", "json", ".json")
    action = titled(await code_actions(editor, uri, diagnostics[0].range, diagnostics, trigger=INVOKED), FIX_JSON)
    fixed, _ = applied("[1, 2,", action, uri)
    assert json.loads(fixed) == [1, 2]
    assert said(editor.client.messages) == said(editor.client.log_messages) == []


async def test_a_large_target_is_offered_as_a_command_that_computes_and_applies_the_fix_when_chosen(editor):
    """The client cannot resolve an edit lazily: a fix over EAGER_MAX_CHARS is not computed while it asks for
    the list (at every selection change), but when the user picks it, and applied with workspace/applyEdit."""
    edits: list[types.ApplyWorkspaceEditParams] = []

    def apply_edit(ls, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        edits.append(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    editor.client.feature(types.WORKSPACE_APPLY_EDIT)(apply_edit)
    text = broken_json_line(EAGER_MAX_CHARS + 10_000, damage_every=50).replace("},{", "},\n{")
    uri, diagnostics = await open_diagnosed(editor, text, "json", ".json")
    asked = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri),
        range=diagnostics[0].range,
        context=types.CodeActionContext(diagnostics=diagnostics),
    )
    # raw JSON: the typed client reads an action with a command and no edit as a Command, and garbles it
    answer = await send_raw(
        editor.client, types.TEXT_DOCUMENT_CODE_ACTION, get_converter().unstructure(asked), "large target"
    )
    [action] = [action for action in answer if FIX_JSON in action["title"]]
    assert "edit" not in action and action["kind"] == "quickfix" and action["title"].endswith("(runs when chosen)")
    assert action["command"]["command"] == FIX_COMMAND
    command = types.ExecuteCommandParams(command=FIX_COMMAND, arguments=action["command"]["arguments"])
    await editor.client.workspace_execute_command_async(command)
    [params] = edits
    fixed, _ = applied(text, types.CodeAction(title=action["title"], edit=params.edit), uri)
    assert len(json.loads(fixed)) == text.count('"id"')
