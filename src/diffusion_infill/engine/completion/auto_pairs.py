"""Closers an editor types by itself: typing `(` in VS Code gives `()` with the cursor between.

Whatever follows the cursor on its line, when it is only such closers, is the editor's and not
the user's: the server's items cover it (diffusion_infill.lsp.completion.items) and a document draft may end
with it (diffusion_infill.engine.completion.repeated_text). One rule for both.
"""

from __future__ import annotations

AUTO_PAIR_CLOSERS = frozenset(")]}>\"'`")


def auto_paired_closers(text: str, offset: int) -> str:
    """The rest of the line after `offset` when it is only closing characters, else ''."""
    rest = text[offset:].split("\n", 1)[0].removesuffix("\r")
    return rest if rest and set(rest) <= AUTO_PAIR_CLOSERS else ""
