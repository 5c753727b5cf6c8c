"""textDocument/codeAction: Fix JSON selection, Fix Markdown selection (quickfix) and
Regenerate selection (refactor.rewrite).

Targets come from the selection (any non-empty range) and from our own diagnostics in
the request's context (for JSON the whole document, for Markdown the problem's lines).
The repair runs on the engine thread (engine.fixes), once per document version and target
(editors ask again at every cursor move); a fixed target becomes a versioned
WorkspaceEdit that replaces exactly the target's range. A target with no valid fix is
offered disabled with the reason (when the client can show that) and edits nothing.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from engine import closure
from engine.fixes import Fixer, FixResult, Surroundings
from lsp.diagnostics import JSON_LANGUAGES, MARKDOWN_LANGUAGES, SOURCE
from lsp.documents import Document, UnknownDocument
from lsp.positions import PositionError

QUICKFIX, REWRITE = types.CodeActionKind.QuickFix, types.CodeActionKind.RefactorRewrite
KINDS = [QUICKFIX, REWRITE]


@dataclass(frozen=True)
class Action:
    name: str  # "json", "markdown" or "regenerate"
    title: str
    kind: types.CodeActionKind
    run: Callable[[Fixer, str, Surroundings], FixResult]


JSON = Action("json", "Fix JSON selection", QUICKFIX, Fixer.fix_json)
MARKDOWN = Action("markdown", "Fix Markdown selection", QUICKFIX, Fixer.fix_markdown)
REGENERATE = Action("regenerate", "Regenerate selection", REWRITE, Fixer.regenerate)


@dataclass(frozen=True)
class Target:
    action: Action
    start: int  # offsets into the document
    end: int
    diagnostics: tuple[types.Diagnostic, ...] = ()


FixKey = tuple[str, int, str, int, int]  # uri, version, action, start, end


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


def _looks_like_json(text: str) -> bool:
    return text.lstrip()[:1] in ("{", "[")


def _selection_targets(document: Document, start: int, end: int) -> list[Target]:
    if start == end:
        return []
    selected = document.text[start:end]
    targets = []
    if document.language_id in JSON_LANGUAGES or _looks_like_json(selected):
        targets.append(Target(JSON, start, end))
    if document.language_id in MARKDOWN_LANGUAGES:
        targets.append(Target(MARKDOWN, start, end))
    targets.append(Target(REGENERATE, start, end))
    return targets


def _ours(diagnostics: list[types.Diagnostic]) -> tuple[types.Diagnostic, ...]:
    return tuple(diagnostic for diagnostic in diagnostics if diagnostic.source == SOURCE)


def _diagnostic_targets(document: Document, diagnostics: list[types.Diagnostic]) -> list[Target]:
    ours = _ours(diagnostics)
    if not ours:
        return []
    if document.language_id in JSON_LANGUAGES:
        return [Target(JSON, 0, len(document.text), ours)]  # JSON is valid or not as a whole document
    if document.language_id not in MARKDOWN_LANGUAGES:
        return []
    lines, targets = document.lines, []
    for diagnostic in ours:
        first, last = diagnostic.range.start.line, diagnostic.range.end.line
        start, end = lines.starts[first], lines.ends[min(last, len(lines) - 1)]
        targets.append(Target(MARKDOWN, start, end, (diagnostic,)))
    return targets


def _wanted(kind: types.CodeActionKind, only: list[str] | None) -> bool:
    """Whether `kind` is among the kinds the client asked for (a kind covers its sub-kinds)."""
    name = str(getattr(kind, "value", kind))
    wanted = [str(getattr(item, "value", item)) for item in only or []]
    return not wanted or any(name == item or name.startswith(f"{item}.") for item in wanted)


def targets(document: Document, params: types.CodeActionParams, encoding: str) -> list[Target]:
    """What the request can be offered, without duplicates, in the order offered."""
    try:
        start = document.lines.offset(params.range.start, encoding)
        end = document.lines.offset(params.range.end, encoding)
    except PositionError as error:
        raise JsonRpcInvalidParams(str(error)) from None
    if start > end:
        raise JsonRpcInvalidParams("the range ends before it starts")
    found = _diagnostic_targets(document, params.context.diagnostics)
    # A range that is one of our diagnostics' own is where the client points at it, not a selection.
    if not any(diagnostic.range == params.range for diagnostic in _ours(params.context.diagnostics)):
        found += _selection_targets(document, start, end)
    unique: dict[tuple[str, int, int], Target] = {}
    for target in found:
        unique.setdefault((target.action.name, target.start, target.end), target)
    return [target for target in unique.values() if _wanted(target.action.kind, params.context.only)]


def surroundings(document: Document, target: Target) -> Surroundings:
    language = closure.language_for_id(document.language_id) or closure.language_for_path(document.uri)
    return Surroundings(document.text[: target.start], document.text[target.end :], language)


def code_action(document: Document, target: Target, result: FixResult, encoding: str,
                disabled_support: bool) -> types.CodeAction | None:
    """The action for one target: an edit of the target's range, or disabled with the reason."""
    title = target.action.title
    if not result.fixed:
        if not disabled_support:
            return None  # a client that cannot show a disabled action would apply it
        return types.CodeAction(title=title, kind=target.action.kind, diagnostics=list(target.diagnostics) or None,
                                disabled=types.CodeActionDisabled(reason=result.reason or "no valid fix"))
    lines = document.lines
    edit = types.TextEdit(range=types.Range(lines.position(target.start, encoding),
                                            lines.position(target.end, encoding)), new_text=result.text)
    change = types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=document.uri, version=document.version),
        edits=[edit])
    return types.CodeAction(title=title, kind=target.action.kind, diagnostics=list(target.diagnostics) or None,
                            is_preferred=target.action.kind == QUICKFIX or None,
                            edit=types.WorkspaceEdit(document_changes=[change]))


async def code_actions(ls, params: types.CodeActionParams) -> list[types.CodeAction]:
    """textDocument/codeAction: the fixes and the rewrite the selection and diagnostics call for."""
    try:
        document = ls.documents.get(params.text_document.uri)
    except UnknownDocument as error:
        raise JsonRpcInvalidParams(str(error)) from None
    # The answer must describe the version asked about: keep it even if the document changes meanwhile.
    snapshot = Document(document.uri, document.language_id, document.version, document.text)
    encoding = ls.encoding
    capability = ls.client_capabilities.text_document and ls.client_capabilities.text_document.code_action
    disabled_support = bool(capability and capability.disabled_support)
    actions = []
    for target in targets(snapshot, params, encoding):
        key = (snapshot.uri, snapshot.version, target.action.name, target.start, target.end)
        result = ls.fixes.get(key)
        if result is None:
            selected, around = snapshot.text[target.start : target.end], surroundings(snapshot, target)
            future = ls.worker.fix(lambda fixer, t=target, s=selected, a=around: t.action.run(fixer, s, a))
            result = await asyncio.wrap_future(future)
            ls.fixes.put(key, result)
        action = code_action(snapshot, target, result, encoding, disabled_support)
        if action is not None:
            actions.append(action)
    return actions
