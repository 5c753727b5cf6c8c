"""End to end through the real server process with a scripted engine: a server whose answer
is a function of the prompt (openai_servers.ScriptedServer), reached through the real remote
engine. The engine's answer is known, so every test here asserts what the server made of it:
a non-empty item where the text is, the columns the server computed, the closure repair, and
the code actions' edits (tests on the embedded model cannot: it may write nothing)."""

from __future__ import annotations

import pytest
from commands import serve_command
from lsprotocol import types
from openai_servers import ScriptedServer
from pygls.exceptions import JsonRpcException

from diffusion_infill.engine import languages, syntax_check
from diffusion_infill.engine.repair import markdown_rules
from tests.lsp.action_client import COMPLETE_TABLE, REGENERATE, action_capabilities, applied, code_actions, span, titled
from tests.lsp.lsp_client import Editor, apply, final_of, start, stop

pytestmark = pytest.mark.asyncio(loop_scope="module")

INVALID_PARAMS = -32602
PATIENT = 120  # seconds: a busy machine must not turn a scripted answer into a timeout

# What the engine answers after a prefix ending like this; each reply to a completion case goes on
# past where the file's closure allows, so the server has to cut it.
CLOSURE_CASES = {
    "unclosed call": ("python", ".py", "result = compute(1, ", "\n", "2) + (3"),
    "string": ("python", ".py", "greeting = 'hello, ", "\nprint(greeting)\n", "world' + (name"),
    "dict": ("python", ".py", "config = {'name': 'x', ", "\n", "'size': 2} | {'more"),
    "json object": ("json", ".json", '{\n  "name": "demo",\n  "version": ', "\n}\n", '"1.0", "tags": ["a"}'),
    "markdown fence": (
        "markdown",
        ".md",
        "# Notes\n\n```python\nfor i in range(3):\n    ",
        "\n```\n\nMore text.\n",
        "print(i)\n```\n",
    ),
    "auto-paired bracket": ("python", ".py", "values = [len(x) for x in items", ")]\n", " if x)] + [("),
    # languageIds whose grammars tree-sitter-language-pack brings: the reply types the auto-paired closer again
    "go": ("go", ".go", 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfmt.Println(', ")\n}\n", '"hi")'),
    "rust": ("rust", ".rs", "fn main() {\n    println!(", ")\n}\n", '"hi")'),
    "c": ("c", ".c", "int sign(int x) {\n    if (", ")\n        return 1;\n    return 0;\n}\n", "x > 0)"),
    "java": ("java", ".java", "class A {\n  void stop(int x) {\n    if (", ")\n      return;\n  }\n}\n", "x > 0)"),
    "ruby": ("ruby", ".rb", "config = { name: 'x', ", "}\n", "size: 2 }"),
    "shell": ("shellscript", ".sh", "files=$(ls ", ')\necho "$files"\n', "-la)"),
    "yaml": ("yaml", ".yaml", "name: demo\ntags: [a, ", "]\n", "b]"),
}
REPLIES = {
    "import os\nos.path": ".join(root, name)",  # after the selected menu entry's text
    "label = '😀🎉漢 中文 ' + f(": "0",
    "def area(width, height):\n    return ": "height * width",
    **{before: reply for _, _, before, _, reply in CLOSURE_CASES.values()},
}
CELL = "ok"  # any table cell


def script(prefix: str, suffix: str) -> str:
    return next((reply for before, reply in REPLIES.items() if prefix.endswith(before)), CELL)


@pytest.fixture(scope="module")
async def scripted():
    server = ScriptedServer(script)
    yield server
    server.close()


@pytest.fixture(scope="module")
async def session(scripted, tmp_path_factory):
    options = {
        "diffusionInfill": {
            "engine": "openai",
            "url": scripted.url,
            "model": "scripted",
            "promptFormat": "fim",
            "minConfidence": 0,
            "timeout": PATIENT,
            "invokedTimeout": PATIENT,
        }
    }
    command = serve_command(None, tmp_path_factory.mktemp("telemetry") / "acceptance.json")
    client, _ = await start(command, action_capabilities(resolve=False, disabled=True), options)
    yield client
    await stop(client)


@pytest.fixture
def editor(session) -> Editor:
    return Editor(session)


async def test_selected_completion_entry_is_extended(editor):
    uri = editor.open("import os\nos.pa\n")
    start, end = types.Position(1, 3), types.Position(1, 5)
    selected = types.SelectedCompletionInfo(range=types.Range(start, end), text="path")
    [item] = await editor.request(uri, end, selected=selected)
    assert item.insert_text == "path.join(root, name)" and item.range == types.Range(start, end)


async def test_a_selected_entry_that_starts_after_the_cursor_is_invalid_params(editor):
    """The selected entry is text the cursor completes (LSP 3.18, SelectedCompletionInfo: "the range of the
    selected completion item"; it replaces text before the cursor): one that starts after it is no such text."""
    uri = editor.open("import os\nos.pa\n")
    selected = types.SelectedCompletionInfo(range=types.Range(types.Position(1, 4), types.Position(1, 5)), text="a")
    with pytest.raises(JsonRpcException) as error:
        await editor.request(uri, types.Position(1, 3), selected=selected)
    assert error.value.code == INVALID_PARAMS


@pytest.mark.parametrize("case", CLOSURE_CASES)
async def test_no_item_breaks_closure(session, editor, case):
    """The engine's reply breaks the file's closure: the item is its longest part that does not."""
    language, suffix_name, before, after, reply = CLOSURE_CASES[case]
    text = before + after
    uri = editor.open(text, language, suffix_name)
    position = editor.end_of(uri, before)
    [item] = await editor.request(uri, position, invoked=True)
    inserted = apply(text, item)[len(before) : len(before) + len(item.insert_text)]
    closers = after.split("\n", 1)[0]
    if closers and set(closers) <= set(")]}\"'`>"):
        # The auto-paired closers are covered and written back once: never duplicated.
        assert item.range.end == editor.end_of(uri, before + closers)
        assert inserted.endswith(closers)
        inserted = inserted.removesuffix(closers)
    assert inserted and reply.startswith(inserted) and inserted != reply, f"{case}: {inserted!r} of {reply!r}"
    grammar = languages.language_for_id(language)
    assert syntax_check.check(before, inserted, after, grammar).valid, f"{case}: {inserted!r} breaks closure"
    assert final_of(session, uri, 1, position).text == inserted


async def test_a_language_id_without_a_grammar_is_said_once_in_the_log(session, editor):
    session.log_messages.clear()
    for language, suffix_name in [("abap", ".abap"), ("go", ".go"), ("abap", ".abap"), ("plaintext", ".txt")]:
        uri = editor.open("x = (1)\n", language, suffix_name)
    await editor.request(uri, types.Position(0, 0), invoked=True)  # answered after the opens were handled
    unchecked = [message.message for message in session.log_messages if "no tree-sitter grammar" in message.message]
    assert unchecked == [
        "no tree-sitter grammar for languageId 'abap': completions there are checked for balanced brackets only",
        "no tree-sitter grammar for languageId 'plaintext': completions there are checked for balanced brackets only",
    ]


async def test_utf16_columns_the_server_computes_on_emoji_and_cjk(session, editor):
    uri = editor.open("label = '😀 中文 ' + f()\n")
    editor.insert(uri, types.Position(0, 11), "🎉漢")  # right after "😀": 9 + 2 units
    assert editor.texts[uri] == "label = '😀🎉漢 中文 ' + f()\n"
    inside_party = types.Position(0, 12)  # between the two units of 🎉: only wrong in utf-16
    with pytest.raises(JsonRpcException) as error:
        await editor.request(uri, inside_party)
    assert error.value.code == INVALID_PARAMS
    cursor = types.Position(0, 24)  # after "f(": 😀 and 🎉 are two units each, 漢 中 文 one
    [item] = await editor.request(uri, cursor)
    # The range ends after the auto-paired ")", a column the server converts from an offset.
    assert item.range == types.Range(cursor, types.Position(0, 25)) and item.insert_text == "0)"
    assert len("label = '😀🎉漢 中文 ' + f()".encode("utf-16-le")) // 2 == 25
    final = final_of(session, uri, 2, cursor)
    assert (final.position.line, final.position.character) == (0, 24)


async def test_complete_table_fills_every_empty_cell_within_the_rows_and_columns(editor):
    table = "| tool | version | notes |\n|---|---|---|\n| ruff | 0.6 | lint |\n| pytest | 8 |\n| mypy | | |"
    text = f"# Tools\n\n{table}\n\n## Next\n"
    uri = editor.open(text, "markdown", ".md")
    action = titled(await code_actions(editor, uri, span(text, table)), COMPLETE_TABLE)
    assert action.disabled is None, action.disabled
    fixed, edit = applied(text, action, uri)
    assert edit.range == span(text, table) and fixed.startswith("# Tools\n\n") and fixed.endswith("\n\n## Next\n")
    assert markdown_rules.table_shapes(edit.new_text) == [(5, 3)]
    assert markdown_rules.empty_cells(edit.new_text) == [] and edit.new_text.count(CELL) == 3
    assert all(word in edit.new_text for word in ("tool", "ruff", "lint", "pytest", "mypy"))


async def test_regenerate_replaces_the_selection_alone_with_what_the_engine_wrote(editor):
    text = "def area(width, height):\n    return width * height\n\nprint(area(2, 3))\n"
    uri = editor.open(text, "python", ".py")
    [action] = await code_actions(editor, uri, span(text, "width * height"))
    assert action.title == REGENERATE and action.disabled is None, action.disabled
    fixed, edit = applied(text, action, uri)
    assert edit.range == span(text, "width * height") and edit.new_text == "height * width"
    assert fixed == text.replace("width * height", "height * width")
