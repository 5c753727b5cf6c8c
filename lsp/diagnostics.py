"""textDocument/publishDiagnostics for JSON and Markdown documents.

JSON: the damage tree-sitter-json and `json.loads` find (engine.jsonfix.damage); in
JSONC documents comments and trailing commas are allowed, so they are blanked out first.
Markdown: the structure rules (engine.markdown_rules). Each diagnostic carries our
`source`, so a code action request that names it is offered the matching fix
(lsp.actions). Computing them takes milliseconds, so it runs on the loop at every edit.
"""

from __future__ import annotations

from lsprotocol import types

from engine import jsonfix, markdown_rules
from lsp.documents import Document

SOURCE = "diffusion-infill"
JSON_LANGUAGES = frozenset({"json"})
JSONC_LANGUAGES = frozenset({"jsonc"})  # comments and trailing commas allowed: VS Code settings, tsconfig
MARKDOWN_LANGUAGES = frozenset({"markdown"})


def _range(document: Document, start: int, end: int, encoding: str) -> types.Range:
    lines = document.lines
    return types.Range(lines.position(start, encoding), lines.position(end, encoding))


def diagnose(document: Document, encoding: str) -> list[types.Diagnostic]:
    """The problems of a JSON or Markdown document; empty for other languages."""
    if document.language_id in JSON_LANGUAGES | JSONC_LANGUAGES and document.text.strip():
        jsonc = document.language_id in JSONC_LANGUAGES
        text = jsonfix.strip_jsonc(document.text) if jsonc else document.text  # same offsets
        return [types.Diagnostic(range=_range(document, item.start, item.end, encoding), message=item.message,
                                 severity=types.DiagnosticSeverity.Error, source=SOURCE, code="json")
                for item in jsonfix.damage(text)]
    if document.language_id in MARKDOWN_LANGUAGES:
        return [types.Diagnostic(range=_range(document, problem.start, problem.end, encoding),
                                 message=problem.message, severity=types.DiagnosticSeverity.Warning,
                                 source=SOURCE, code=f"markdown-{problem.rule}")
                for problem in markdown_rules.problems(document.text)]
    return []


def handles(document: Document) -> bool:
    return document.language_id in JSON_LANGUAGES | JSONC_LANGUAGES | MARKDOWN_LANGUAGES


def publish(ls, document: Document) -> None:
    """Sends the diagnostics of a JSON or Markdown document for its current version."""
    if not handles(document):
        return
    diagnostics = diagnose(document, ls.encoding)
    ls.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=document.uri, diagnostics=diagnostics, version=document.version))


def clear(ls, uri: str) -> None:
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
