"""Which code actions a request is offered (no server process)."""

from __future__ import annotations

from lsprotocol import types

from diffusion_infill.lsp.diagnostics.publisher import diagnose
from diffusion_infill.lsp.fixes.targets import (
    ACTIONS,
    CHECK_MAX_CHARS,
    MARKDOWN_CHECK_MAX_CHARS,
    Target,
    surroundings,
    targets,
)
from diffusion_infill.lsp.languages import SOURCE
from diffusion_infill.lsp.text.documents import Document
from diffusion_infill.lsp.text.positions import Lines
from diffusion_infill.lsp.text.rope import Rope
from diffusion_infill.lsp.text.window import MAX_AFTER, MAX_BEFORE


def params(document: Document, start: int, end: int, diagnostics=(), only=None) -> types.CodeActionParams:
    lines = Lines(document.text)
    where = types.Range(lines.position(start, "utf-16"), lines.position(end, "utf-16"))
    return types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(document.uri),
        range=where,
        context=types.CodeActionContext(diagnostics=list(diagnostics), only=only),
    )


def offered(document: Document, request: types.CodeActionParams) -> list[tuple[str, int, int]]:
    return [(t.action.name, t.start, t.end) for t in targets(document, request, "utf-16")]


def test_a_selection_in_python_is_offered_regenerate_only():
    document = Document("file:///a.py", "python", 1, Rope("x = [1, 2]\n"))
    assert offered(document, params(document, 0, 10)) == [("regenerate", 0, 10)]


def test_a_json_looking_selection_anywhere_is_offered_fix_json():
    text = "Notes\n\n{'a': 1}\n"
    document = Document("file:///a.md", "markdown", 1, Rope(text))
    start = text.index("{")
    assert offered(document, params(document, start, start + 8)) == [
        ("json", start, start + 8),
        ("regenerate", start, start + 8),
    ]  # no Markdown rule is broken


def test_a_selection_with_nothing_to_fix_is_not_offered_a_fix():
    markdown = Document("file:///a.md", "markdown", 1, Rope("# Title\n\nSome *good* text.\n"))
    assert offered(markdown, params(markdown, 0, len(markdown.text))) == [("regenerate", 0, len(markdown.text))]
    broken = Document("file:///b.md", "markdown", 1, Rope("Some *open text.\n"))
    assert ("markdown", 0, 16) in offered(broken, params(broken, 0, 16))
    valid = Document("file:///a.json", "json", 1, Rope('{"a": [1, 2]}'))
    assert offered(valid, params(valid, 0, len(valid.text))) == [("regenerate", 0, len(valid.text))]


def test_a_selection_in_jsonc_is_offered_the_fix_that_keeps_comments():
    document = Document("file:///settings.json", "jsonc", 1, Rope('{"a": 1, // one\n}'))
    assert offered(document, params(document, 0, 5)) == [("jsonc", 0, 5), ("regenerate", 0, 5)]


def test_a_json_diagnostic_targets_the_whole_document_and_is_not_a_selection():
    text = '{"a": 1,}'
    document = Document("file:///a.json", "json", 1, Rope(text))
    [diagnostic, *_] = diagnose(document, "utf-16")
    request = params(document, 0, 0, [diagnostic])
    request.range = diagnostic.range  # the client points at the diagnostic itself
    assert offered(document, request) == [("json", 0, len(text))]


def test_a_markdown_diagnostic_targets_its_lines():
    text = "# T\n\n| a | b |\n|---|---|\n| 1 |\n\nend\n"
    document = Document("file:///a.md", "markdown", 1, Rope(text))
    [diagnostic] = diagnose(document, "utf-16")
    assert diagnostic.source == SOURCE
    table_start, table_end = text.index("| a"), text.index("| 1 |") + len("| 1 |")
    assert offered(document, params(document, 5, 5, [diagnostic])) == [("markdown", table_start, table_end)]


def test_markdown_diagnostics_and_the_selection_are_one_fix_over_all_of_them():
    text = "# T\n\n| a | b |\n|---|---|\n| 1 |\n\n```python\nprint(1)\n"
    document = Document("file:///a.md", "markdown", 1, Rope(text))
    table, fence = diagnose(document, "utf-16")
    start = text.index("| a")
    [(name, first, last)] = offered(document, params(document, len(text), len(text), [table, fence]))
    assert (name, first, last) == ("markdown", start, len(text))  # one entry: the table's lines to the fence's end
    assert [t for t in offered(document, params(document, 0, len(text), [table, fence])) if t[0] == "markdown"] == [
        ("markdown", 0, len(text))
    ]  # the selection, which holds both
    [target] = targets(document, params(document, len(text), len(text), [table, fence]), "utf-16")
    assert target.diagnostics == (table, fence)


def test_a_selection_too_large_to_check_is_offered_its_fix_only_where_our_diagnostics_show_a_problem():
    """Editors ask at every selection change: a select-all of a large file is not checked on the event
    loop (seconds at 1 MB); the diagnostics, computed in their own process, say whether it needs a fix."""
    text = "Some *open text.\n\n" + "A line of good prose, long enough.\n\n" * (MARKDOWN_CHECK_MAX_CHARS // 30)
    document = Document("file:///big.md", "markdown", 1, Rope(text))
    assert offered(document, params(document, 0, len(text))) == [("regenerate", 0, len(text))]
    problems = diagnose(document, "utf-16")
    assert problems and offered(document, params(document, 0, len(text), problems)) == [
        ("markdown", 0, len(text)),
        ("regenerate", 0, len(text)),
    ]
    broken = '{"a": [1, 2' + ", 3" * CHECK_MAX_CHARS
    json = Document("file:///big.json", "json", 1, Rope(broken))
    assert offered(json, params(json, 0, len(broken))) == [("regenerate", 0, len(broken))]
    assert offered(json, params(json, 0, len(broken), diagnose(json, "utf-16"))) == [
        ("json", 0, len(broken)),
        ("regenerate", 0, len(broken)),
    ]


def test_only_filters_by_kind_prefix():
    document = Document("file:///a.json", "json", 1, Rope('{"a": 1,}'))
    assert offered(document, params(document, 0, 9, only=[types.CodeActionKind.Refactor])) == [("regenerate", 0, 9)]
    assert offered(document, params(document, 0, 9, only=[types.CodeActionKind.QuickFix])) == [("json", 0, 9)]


def test_other_servers_diagnostics_are_ignored():
    document = Document("file:///a.json", "json", 1, Rope('{"a": 1}'))
    foreign = types.Diagnostic(
        range=types.Range(types.Position(0, 0), types.Position(0, 1)), message="x", source="another-server"
    )
    assert offered(document, params(document, 0, 0, [foreign])) == []


def test_a_diagnostic_from_before_the_document_shrank_is_ignored():
    text = "# T\n\n| a | b |\n|---|---|\n| 1 |\n\nend\n"
    [diagnostic] = diagnose(Document("file:///a.md", "markdown", 1, Rope(text)), "utf-16")
    shrunk = Document("file:///a.md", "markdown", 2, Rope("# T\n"))
    assert offered(shrunk, params(shrunk, 0, 0, [diagnostic])) == []


def test_the_repair_and_the_closure_check_see_a_bounded_window_of_a_big_document():
    line = '  {"name": "x", "value": 1},\n'
    text = "[\n" + line * 20_000 + '  {"name": "y", "value": },\n' + line * 20_000 + "]\n"
    document = Document("file:///big.json", "json", 1, Rope(text))
    start = text.index('"value": }') + len('"value": ')
    around = surroundings(document, Target(ACTIONS["json"], start, start))
    assert 0 < len(around.before) <= MAX_BEFORE and 0 < len(around.after) <= MAX_AFTER
    assert text[:start].endswith(around.before) and text[start:].startswith(around.after)
