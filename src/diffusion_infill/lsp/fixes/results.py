"""The latest code-action results, per document version and target, so that a client asking again for the
same place of the same version (editors ask at every cursor move) is answered without running the repair
again."""

from __future__ import annotations

from collections import OrderedDict

from diffusion_infill.engine.repair.fixes import FixResult
from diffusion_infill.lsp.fixes.targets import Target
from diffusion_infill.lsp.text.documents import Document

FixKey = tuple[str, int, str, int, int]  # uri, version, action, start, end


def fix_key(document: Document, target: Target) -> FixKey:
    return document.uri, document.version, target.action.name, target.start, target.end


class FixResults:
    """The latest fix results, so that a client asking again for the same place of the same
    version (editors ask at every cursor move) is answered without running the model again."""

    def __init__(self, size: int = 32):
        self.size = size
        self._results: OrderedDict[FixKey, FixResult] = OrderedDict()

    def get(self, key: FixKey) -> FixResult | None:
        if key in self._results:
            self._results.move_to_end(key)
        return self._results.get(key)

    def put(self, key: FixKey, result: FixResult) -> None:
        self._results[key] = result
        self._results.move_to_end(key)
        while len(self._results) > self.size:
            self._results.popitem(last=False)

    def clear(self) -> None:
        """Another model or other settings: the kept results would no longer be what it computes."""
        self._results.clear()

    def forget(self, uri: str) -> None:
        """The document was opened or closed: a reopened one starts again at version 1, with other text."""
        for key in [key for key in self._results if key[0] == uri]:
            del self._results[key]
