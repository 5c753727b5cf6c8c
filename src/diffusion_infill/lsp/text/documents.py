"""The open documents, kept in sync from didOpen/didChange/didClose (incremental sync).

pygls keeps its own copy too, but splits lines with `str.splitlines` and clamps bad
positions silently; completions need the exact text the editor has, so this store
applies edits with `diffusion_infill.lsp.text.positions` and knows each document's version.
Each text is a `Rope` (diffusion_infill.lsp.text.rope): a keystroke in a 10 MB document copies
a piece of it, not all of it. Its text has no lone surrogates: the protocol replaced them
(diffusion_infill.lsp.transport.strings).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from lsprotocol.types import TextDocumentContentChangeEvent, TextDocumentContentChangePartial

from diffusion_infill.lsp.text.positions import Lines, PositionError
from diffusion_infill.lsp.text.rope import Rope
from diffusion_infill.lsp.text.window import Tails


class OutOfSync(RuntimeError):
    """The server's copy of a document no longer follows the editor's: a change could not be applied."""

    def __init__(self, uri: str, reason: str):
        super().__init__(uri, reason)
        self.uri, self.reason = uri, reason

    def __str__(self) -> str:
        return (
            f"lost track of {self.uri} ({self.reason}): no completions, diagnostics or fixes for it "
            "until it is reopened or the editor sends its whole text"
        )


class UnknownDocument(KeyError):
    """A request named a document that is not open."""

    def __str__(self) -> str:
        return f"document {self.args[0]} is not open (send textDocument/didOpen first)"


@dataclass
class Document:
    uri: str
    language_id: str
    version: int
    text: Rope
    # False once a change could not be applied: `text` is then not what the editor has, whatever
    # `version` says, and nothing may be computed from it until a change sends the whole text.
    in_sync: bool = True
    _lines: Lines | None = field(default=None, repr=False)

    @property
    def lines(self) -> Lines:
        """Line offsets of the current text, computed once per version."""
        if self._lines is None or self._lines.text is not self.text:
            self._lines = Lines(self.text)
        return self._lines

    def apply(self, change: TextDocumentContentChangeEvent, encoding: str) -> None:
        """Applies one content change: a range replacement, or the whole text."""
        if isinstance(change, TextDocumentContentChangePartial):
            lines, inserted = self.lines, change.text
            start = lines.offset(change.range.start, encoding, clamp_line=True)
            end = max(start, lines.offset(change.range.end, encoding, clamp_line=True))
            self.text = self.text.replaced(start, end, inserted)
            self._lines = lines.edited(start, end, inserted, self.text)
        else:
            self.text = Rope(change.text)


class Documents:
    """Open documents by URI."""

    def __init__(self) -> None:
        self._open: dict[str, Document] = {}
        self._tails = Tails()  # what the model reads of each, as another document, per version

    def open(self, uri: str, language_id: str, version: int, text: str) -> Document:
        document = Document(uri, language_id, version, Rope(text))
        self._open[uri] = document
        return document

    def change(
        self, uri: str, version: int, changes: Iterable[TextDocumentContentChangeEvent], encoding: str
    ) -> Document:
        """Applies `changes` in order (each one's positions refer to the text after the previous).

        When one change names no place in the text, the editor's text is no longer known: the
        document takes the new version but is marked out of sync (OutOfSync is raised once, for
        the change that lost track), and stays so, whatever later incremental changes say, until
        a change carries the whole text.
        """
        document = self.get(uri)
        changes = list(changes)
        document.version = version  # first: a result computed for the previous version is stale now
        if not document.in_sync:
            whole = [i for i, change in enumerate(changes) if not isinstance(change, TextDocumentContentChangePartial)]
            if not whole:
                return document
            changes = changes[whole[-1] :]
        try:
            for change in changes:
                document.apply(change, encoding)
        except PositionError as error:
            document.in_sync = False
            raise OutOfSync(uri, str(error)) from None
        document.in_sync = True
        return document

    def others(self, document: Document, most: int = 4) -> list[Document]:
        """The last `most` documents opened besides `document` in its language: lines to copy from."""
        same = [
            other
            for other in self._open.values()
            if other is not document and other.language_id == document.language_id
        ]
        return same[-most:]

    def tails_of_others(self, document: Document) -> tuple[str, ...]:
        """What the model reads of the `others` of `document`: each one's tail, sliced once a version."""
        return tuple(self._tails.of(other.uri, other.text) for other in self.others(document))

    def close(self, uri: str) -> Document | None:
        """Forgets the document; returns it, or None when it was not open."""
        self._tails.forget(uri)
        return self._open.pop(uri, None)

    def get(self, uri: str) -> Document:
        try:
            return self._open[uri]
        except KeyError:
            raise UnknownDocument(uri) from None
