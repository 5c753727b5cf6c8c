"""Where a completion goes in the document, the inline completion items that put it there, and the
`infill/draft` notifications that show it converging (docs/protocol.md).

Two cases change what the engine sees and what an item replaces:
- a selected entry in the editor's completion menu (`selectedCompletionInfo`): the
  completion must extend that entry's text and replace the same range, so the engine
  completes after the entry's text as if it were already inserted;
- the rest of the line is only closers the editor auto-paired (`foo(|)`): the item's
  range covers them and its text ends with them, so accepting never leaves `foo(x))`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsprotocol.types import Command, InlineCompletionItem, Position, Range, SelectedCompletionInfo

from diffusion_infill.engine.completion.auto_pairs import auto_paired_closers
from diffusion_infill.engine.requests import Draft
from diffusion_infill.lsp.text.positions import Lines, PositionError
from diffusion_infill.lsp.text.rope import Rope
from diffusion_infill.lsp.text.window import around

DRAFT_NOTIFICATION = "infill/draft"


@dataclass(frozen=True)
class SelectedEntry:
    """The completion menu's selected entry (`selectedCompletionInfo`), as offsets into the document."""

    start: int  # where the entry's range starts: at or before the cursor
    end: int  # where it ends
    text: str  # the entry's text, which every item extends


def selected_entry(
    lines: Lines, encoding: str, cursor: int, selected: SelectedCompletionInfo | None
) -> SelectedEntry | None:
    """The request's selected entry as offsets; PositionError for a range outside the document or one that does
    not start at or before the cursor."""
    if selected is None:
        return None
    start, end = lines.offset(selected.range.start, encoding), lines.offset(selected.range.end, encoding)
    if not start <= cursor or start > end:
        raise PositionError("selectedCompletionInfo.range must start at or before the cursor")
    return SelectedEntry(start, end, selected.text)


@dataclass(frozen=True)
class Placement:
    """The text around the gap and the span an item replaces, as offsets into the document."""

    prefix: str  # what the engine sees before the gap (bounded: lsp.text.window)
    suffix: str  # what the engine sees after the gap
    start: int  # where an item's range starts: the cursor, or the selected entry's start
    end: int  # where it ends: after the cursor, the selected entry, and any auto-paired closers
    lead: str  # text every item starts with: the selected entry's text
    trail: str  # text every item ends with: the auto-paired closers its range covers

    def insert_text(self, completion: str) -> str:
        return self.lead + completion + self.trail


def placement(text: str | Rope, cursor: int, selected: SelectedEntry | None = None) -> Placement:
    """Where a completion at `cursor` goes, extending the menu's `selected` entry if any. The prefix
    and suffix are the bounded window (lsp.text.window)."""
    start, end, lead = cursor, cursor, ""
    if selected is not None:
        start, end, lead = selected.start, max(selected.end, cursor), selected.text
    prefix, suffix = around(text, start, end, lead)
    trail = auto_paired_closers(suffix, 0)
    return Placement(prefix=prefix, suffix=suffix, start=start, end=end + len(trail), lead=lead, trail=trail)


def items(
    completions: list[str], where: Placement, lines: Lines, encoding: str, command: Command
) -> list[InlineCompletionItem]:
    """One item per distinct non-empty completion, in order (the first is the best)."""
    # The range is always given: without one, some clients replace the word before the cursor.
    span = Range(start=lines.position(where.start, encoding), end=lines.position(where.end, encoding))
    distinct = [text for text in dict.fromkeys(completions) if text]
    return [InlineCompletionItem(insert_text=where.insert_text(text), range=span, command=command) for text in distinct]


def draft_params(
    uri: str, version: int, at: Position, draft: Draft, ms: float, answered: list[Draft]
) -> dict[str, Any]:
    """An infill/draft notification: `draft` of the request at `at` in that version, `ms` after its run or answer
    began; the final one also gives each item's own info line, in the answer's order (docs/protocol.md)."""
    params: dict[str, Any] = {
        "uri": uri,
        "version": version,
        "position": {"line": at.line, "character": at.character},
        "text": draft.text,
        "step": draft.step,
        "final": draft.final,
        "source": draft.source,
        "ms": round(ms),
        "confidence": draft.confidence,
    }
    if draft.final:
        params["items"] = [
            {"step": item.step, "ms": round(item.ms or 0), "confidence": item.confidence, "source": item.source}
            for item in answered
            if item.text
        ]
    return params
