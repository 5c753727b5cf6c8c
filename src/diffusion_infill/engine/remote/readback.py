"""The insertion read back from a server's answer (engine.remote.client): a clamped canvas without
the pinned suffix head it ends with, found where the server may not have sent the head verbatim.

Nothing around the insertion is stripped: a leading or trailing newline may be the insertion's own
(a line added at the end of a file, a line break before the text after the cursor)."""

from __future__ import annotations

TAIL_SLACK = 8  # characters beyond twice the head searched for where the head begins


def canvas_insertion(canvas: str, head: str, whole: bool) -> str:
    """The text before the pinned suffix head in a canvas answer.

    `whole`: the server sent the whole canvas (vLLM's finish_reason "length"), so its last slots are
    the head's. vLLM writes its argmax at pinned slots too, which need not be the pinned tokens
    (docs/remote.md), so the head is matched where its text is nearest; an answer that ended before
    the canvas did (end of turn inside the gap) holds no head and is the insertion as it is."""
    if not head:
        return canvas
    if canvas.endswith(head):
        return canvas[: -len(head)]
    if not whole:
        return canvas
    distances = _tail_distances(canvas[-(2 * len(head) + TAIL_SLACK) :], head)
    length = min(range(len(distances)), key=lambda k: (distances[k], abs(k - len(head))))
    return canvas[: len(canvas) - length]


def _tail_distances(text: str, head: str) -> list[int]:
    """distances[k]: the edit distance between the last k characters of `text` and `head` (one
    Levenshtein table over both strings reversed, so every tail is one cell of its last row)."""
    reversed_text = text[::-1]
    row = list(range(len(reversed_text) + 1))
    for i, wanted in enumerate(reversed(head), 1):
        previous, row = row, [i] + [0] * len(reversed_text)
        for j, seen in enumerate(reversed_text, 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (wanted != seen))
    return row
