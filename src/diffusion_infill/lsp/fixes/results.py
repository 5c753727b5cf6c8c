"""The latest code-action results, per document version and target, so that a client asking again for the
same place of the same version (editors ask at every cursor move) is answered without running the repair
again."""

from __future__ import annotations

from diffusion_infill.engine.lru import Lru
from diffusion_infill.engine.repair.fixes import FixResult
from diffusion_infill.lsp.fixes.targets import Target
from diffusion_infill.lsp.text.documents import Document

FixKey = tuple[str, int, str, int, int]  # uri, version, action, start, end


def fix_key(document: Document, target: Target) -> FixKey:
    return document.uri, document.version, target.action.name, target.start, target.end


class FixResults(Lru[FixKey, FixResult]):
    """The latest fix results, so that a client asking again for the same place of the same
    version (editors ask at every cursor move) is answered without running the model again.
    Cleared when another model or other settings would compute other results."""

    def __init__(self, size: int = 32):
        super().__init__(size)

    def forget(self, uri: str) -> None:
        """The document was opened or closed: a reopened one starts again at version 1, with other text."""
        self.forget_where(lambda key: key[0] == uri)
