"""The document languages our diagnostics and code actions handle, the `source` they share, and
the grammar the closure check parses a document with (none: brackets only, said once per languageId).

A diagnostic carries SOURCE so that a code action request naming it is offered the
matching fix: diffusion_infill.lsp.diagnostics.publisher writes it, diffusion_infill.lsp.fixes.targets reads it.
"""

from __future__ import annotations

from diffusion_infill.engine import languages

SOURCE = "diffusion-infill"
JSON_LANGUAGES = frozenset({"json"})
JSONC_LANGUAGES = frozenset({"jsonc"})  # comments and trailing commas allowed: VS Code settings, tsconfig
MARKDOWN_LANGUAGES = frozenset({"markdown"})


def closure_language(language_id: str, uri: str) -> str | None:
    """The grammar of a document's languageId, else of its file name; None: brackets only."""
    return languages.language_for_id(language_id) or languages.language_for_path(uri)


class Unchecked:
    """The languageIds opened without a grammar, each to be told once in the client's log."""

    def __init__(self):
        self._told: set[str] = set()

    def first(self, language_id: str, uri: str) -> str | None:
        """What to tell when a document opens without a grammar, the first time for its languageId; else None."""
        if language_id in self._told or closure_language(language_id, uri) is not None:
            return None
        self._told.add(language_id)
        grammar = f"no tree-sitter grammar for languageId {language_id!r}"
        return f"{grammar}: completions there are checked for balanced brackets only"
