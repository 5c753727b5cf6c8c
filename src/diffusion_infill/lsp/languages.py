"""The document languages our diagnostics and code actions handle, and the `source` they share.

A diagnostic carries SOURCE so that a code action request naming it is offered the
matching fix: diffusion_infill.lsp.diagnostics writes it, diffusion_infill.lsp.actions reads it.
"""

from __future__ import annotations

SOURCE = "diffusion-infill"
JSON_LANGUAGES = frozenset({"json"})
JSONC_LANGUAGES = frozenset({"jsonc"})  # comments and trailing commas allowed: VS Code settings, tsconfig
MARKDOWN_LANGUAGES = frozenset({"markdown"})
