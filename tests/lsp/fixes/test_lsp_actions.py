"""Code actions and diagnostics end to end through the real server on the embedded model.

Fix JSON and Fix Markdown must produce a valid document whatever the model writes (every
candidate is validated, the deterministic repair among them); Regenerate depends on the
model, so here only that they are offered (their edits: test_lsp_scripted.py, on an engine
whose answer is known). Every edit is applied as the editor would, and everything outside the target
must be left exactly as it was. The client here takes each action's edit with the action
(no codeAction/resolve, see test_lsp_action_resolve.py) and can show disabled actions.
"""

from __future__ import annotations

import json

import pytest
from commands import serve_command
from lsprotocol import types

from diffusion_infill.engine.repair import jsonfix, markdown_rules
from tests.lsp.action_client import (
    COMPLETE_TABLE,
    FIX_JSON,
    FIX_MARKDOWN,
    REGENERATE,
    action_capabilities,
    applied,
    code_actions,
    open_diagnosed,
    published_after,
    span,
    start_for_actions,
    titled,
)
from tests.lsp.lsp_client import Editor, start, stop

pytestmark = pytest.mark.asyncio(loop_scope="module")
EAGER = {"resolve": False, "disabled": True}  # edits come with the actions; disabled ones are shown


@pytest.fixture(scope="module")
async def session(model_dir, tmp_path_factory):
    client = await start_for_actions(model_dir, tmp_path_factory.mktemp("t") / "a.json", **EAGER)
    yield client
    await stop(client)


@pytest.fixture
def editor(session) -> Editor:
    return Editor(session)


async def test_code_action_kinds_are_advertised(session):
    provider = session.initialize_result.capabilities.code_action_provider
    assert set(provider.code_action_kinds) == {types.CodeActionKind.QuickFix, types.CodeActionKind.RefactorRewrite}


async def test_broken_json_document_is_diagnosed_and_its_diagnostic_offers_the_fix(editor):
    text = '{\n  name: \'demo\',\n  "tags": ["a", "b",],\n  "private": True\n'
    uri, diagnostics = await open_diagnosed(editor, text, "json", ".json")
    assert diagnostics and all(d.source == "diffusion-infill" for d in diagnostics)
    actions = await code_actions(editor, uri, diagnostics[0].range, diagnostics[:1])
    fix = titled(actions, FIX_JSON)
    assert fix.kind == types.CodeActionKind.QuickFix and fix.disabled is None
    fixed, _ = applied(text, fix, uri)
    assert json.loads(fixed) == {"name": "demo", "tags": ["a", "b"], "private": True}


async def test_valid_json_gets_empty_diagnostics(editor):
    _, diagnostics = await open_diagnosed(editor, '{"a": [1, 2]}\n', "json", ".json")
    assert diagnostics == []


SETTINGS = '{\n  // indentation\n  "editor.tabSize": 2, /* spaces */\n  "files.exclude": ["out",],\n}\n'


async def test_comments_and_trailing_commas_are_damage_in_json_but_not_in_jsonc(editor):
    _, diagnostics = await open_diagnosed(editor, SETTINGS, "jsonc", ".jsonc")
    assert diagnostics == []
    _, diagnostics = await open_diagnosed(editor, SETTINGS, "json", ".json")
    assert diagnostics


async def test_fix_json_in_a_jsonc_document_keeps_comments_and_trailing_commas(editor):
    text = SETTINGS.replace('"editor.tabSize": 2,', '"editor.tabSize": 2')  # a comma missing
    uri, diagnostics = await open_diagnosed(editor, text, "jsonc", ".jsonc")
    assert diagnostics
    fixed, _ = applied(text, titled(await code_actions(editor, uri, diagnostics[0].range, diagnostics), FIX_JSON), uri)
    assert jsonfix.comments(fixed) == jsonfix.comments(text) and '["out",]' in fixed
    assert json.loads(jsonfix.strip_jsonc(fixed)) == {"editor.tabSize": 2, "files.exclude": ["out"]}


async def test_the_languageid_decides_the_dialect_and_a_json_fix_says_how_many_comments_it_drops(editor):
    """languageId json is JSON whatever the file's name (here a .jsonc one): its fix loads with a strict
    parser and its title counts the comments it dropped (lsp/fixes/targets.py: jsonfix.is_jsonc)."""
    text = SETTINGS.replace('"editor.tabSize": 2,', '"editor.tabSize": 2')
    uri, diagnostics = await open_diagnosed(editor, text, "json", ".jsonc")
    actions = await code_actions(editor, uri, diagnostics[0].range, diagnostics)
    fixed, _ = applied(text, titled(actions, f"{FIX_JSON} (drops 2 comments)"), uri)
    assert json.loads(fixed) == {"editor.tabSize": 2, "files.exclude": ["out"]}


async def test_json_block_inside_markdown_is_fixed_and_nothing_else_changes(editor):
    block = '{"id": 3, \'items\': [1, 2 3], // counted\n "done": False,}'
    text = f"# Config\n\nThe settings:\n\n```json\n{block}\n```\n\nMore prose with *emphasis*.\n"
    uri, diagnostics = await open_diagnosed(editor, text, "markdown", ".md")
    assert diagnostics == []
    actions = await code_actions(editor, uri, span(text, block))
    dropping = f"{FIX_JSON} (drops 1 comment)"  # JSON, not JSONC: the comment goes, and the title says so
    assert {action.title for action in actions} == {dropping, REGENERATE}  # the block breaks no Markdown rule
    fixed, edit = applied(text, titled(actions, dropping), uri)
    assert edit.range == span(text, block)  # the selection only
    start = text.index(block)
    assert fixed[:start] == text[:start] and fixed.endswith(text[start + len(block) :])
    assert json.loads(edit.new_text) == {"id": 3, "items": [1, 2, 3], "done": False}


async def test_table_in_the_middle_of_a_document_is_diagnosed_and_fixed(editor):
    table = "| tool | version | notes |\n|---|---|---|\n| ruff | 0.6 |\n| pytest | 8 | tests | extra |"
    text = f"# Tools\n\nWe use:\n\n{table}\n\n## Next\n\n- one\n- two\n"
    uri, diagnostics = await open_diagnosed(editor, text, "markdown", ".md")
    [problem] = diagnostics
    assert problem.code == "markdown-table" and problem.range == span(text, table)
    actions = await code_actions(editor, uri, problem.range, [problem])
    fix = titled(actions, FIX_MARKDOWN)
    fixed, edit = applied(text, fix, uri)
    assert edit.range == span(text, table)
    assert fixed.startswith("# Tools\n\nWe use:\n\n") and fixed.endswith("\n\n## Next\n\n- one\n- two\n")
    rows = edit.new_text.splitlines()
    assert len({len(markdown_rules.cells(row)) for row in rows}) == 1 and "extra" in rows[-1]
    assert markdown_rules.problems(fixed) == []


async def test_a_table_with_empty_cells_is_offered_complete_table_between_the_fixes(editor):
    """What the model writes into the cells: test_lsp_scripted.py, where the engine's answer is known."""
    table = "| tool | version | notes |\n|---|---|---|\n| ruff | 0.6 | lint |\n| pytest | 8 |\n| mypy | | |"
    text = f"# Tools\n\n{table}\n\n## Next\n"
    uri, _ = await open_diagnosed(editor, text, "markdown", ".md")
    actions = await code_actions(editor, uri, span(text, table))
    assert [action.title for action in actions] == [FIX_MARKDOWN, COMPLETE_TABLE, REGENERATE]
    assert titled(actions, COMPLETE_TABLE).kind == types.CodeActionKind.RefactorRewrite


async def test_complete_table_is_not_offered_without_a_table_to_complete(editor):
    text = "| a | b |\n|---|---|\n| 1 | 2 |\n\nprose\n"
    uri, _ = await open_diagnosed(editor, text, "markdown", ".md")
    assert COMPLETE_TABLE not in {action.title for action in await code_actions(editor, uri, span(text, text))}


async def test_markdown_selection_gets_fences_emphasis_and_lists_fixed(editor):
    selection = "Some **bold text\n\n- a\n* b\n\n```python\nprint(1)\n"
    text = "# Title\n\n" + selection
    uri, diagnostics = await open_diagnosed(editor, text, "markdown", ".md")
    assert {d.code for d in diagnostics} == {"markdown-emphasis", "markdown-list", "markdown-fence"}
    actions = await code_actions(editor, uri, span(text, selection), only=[types.CodeActionKind.QuickFix])
    assert [action.title for action in actions] == [FIX_MARKDOWN]
    fixed, _ = applied(text, actions[0], uri)
    assert fixed.startswith("# Title\n\nSome **bold text**\n\n- a\n- b\n\n```python\nprint(1)\n```")
    assert markdown_rules.problems(fixed) == []


async def test_one_fix_markdown_entry_fixes_the_table_and_the_fence_in_one_application(editor):
    text = "# Notes\n\n| a | b |\n|---|---|\n| 1 |\n\n```python\nprint(1)\n"
    uri, diagnostics = await open_diagnosed(editor, text, "markdown", ".md")
    assert {d.code for d in diagnostics} == {"markdown-table", "markdown-fence"}
    for where in (span(text, "| 1 |"), span(text, text)):  # at the table, with both diagnostics; everything selected
        actions = await code_actions(editor, uri, where, diagnostics, only=[types.CodeActionKind.QuickFix])
        assert [action.title for action in actions] == [FIX_MARKDOWN]
        fixed, _ = applied(text, actions[0], uri)
        assert markdown_rules.problems(fixed) == [] and fixed.startswith("# Notes\n\n| a | b |\n")


async def test_regenerate_is_offered_for_any_language(editor):
    """Its edit: test_lsp_scripted.py, where the engine's answer is known."""
    text = "def area(width, height):\n    return width * height\n\nprint(area(2, 3))\n"
    uri = editor.open(text, "python", ".py")
    [action] = await code_actions(editor, uri, span(text, "width * height"))
    assert action.title == REGENERATE and action.kind == types.CodeActionKind.RefactorRewrite


async def test_no_valid_fix_is_offered_disabled_with_the_reason_and_changes_nothing(editor):
    # Punctuation with no value in it, too long for a repair canvas: no candidate can be valid.
    records = "\n".join([": , ] :: ,"] * 200)
    uri, diagnostics = await open_diagnosed(editor, records, "json", ".json")
    assert diagnostics
    actions = await code_actions(editor, uri, diagnostics[0].range, diagnostics)
    fix = titled(actions, FIX_JSON)
    assert fix.edit is None and "not JSON" in fix.disabled.reason
    assert editor.texts[uri] == records


async def test_an_empty_range_without_diagnostics_offers_nothing(editor):
    text = '{"a": 1}\n'
    uri, _ = await open_diagnosed(editor, text, "json", ".json")
    assert not await code_actions(editor, uri, types.Range(types.Position(0, 1), types.Position(0, 1)))


async def test_editing_the_document_republishes_its_diagnostics(editor):
    uri, diagnostics = await open_diagnosed(editor, '{"a": 1}', "json", ".json")
    assert diagnostics == []

    def add_a_comma() -> str:
        editor.insert(uri, types.Position(0, 7), ",")
        return uri

    params = await published_after(editor, add_a_comma)
    assert params.version == 2 and params.diagnostics


async def test_fixes_still_work_when_the_model_cannot_be_loaded(tmp_path):
    client, _ = await start(
        serve_command(None, tmp_path / "t.json"),
        action_capabilities(**EAGER),
        {"diffusionInfill": {"model": str(tmp_path / "no-such-model")}},
    )
    try:
        editor = Editor(client)
        text = "[1, 2,"
        uri, diagnostics = await open_diagnosed(editor, text, "json", ".json")
        actions = await code_actions(editor, uri, diagnostics[0].range, diagnostics)
        fixed, _ = applied(text, titled(actions, FIX_JSON), uri)
        assert json.loads(fixed) == [1, 2]
        regenerate = await code_actions(editor, uri, span(text, "1, 2"))
        assert titled(regenerate, REGENERATE).disabled.reason == "cannot regenerate: the model could not be loaded"
    finally:
        await stop(client)
