"""Context from further up the file: whole lines that share identifiers with the cursor's line.

A small model copies far better than it invents, and what it would copy (a call's
arguments, an attribute, a name defined above) is often further up than the prefix window
reaches. One rule picks those lines, in training (`diffusion_infill.engine.training.objective`) and in
inference (`diffusion_infill.engine.completion.prefix`) alike; the chosen lines go before the window.
"""

from __future__ import annotations

import keyword
import re

IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z_][A-Za-z0-9_]{2,}")
# Names that say nothing about which line is related: nearly every line has one.
COMMON_NAMES = (
    frozenset(keyword.kwlist)
    | frozenset(keyword.softkwlist)
    | {
        "self",
        "cls",
        "args",
        "kwargs",
        "len",
        "str",
        "int",
        "list",
        "dict",
        "print",
        "range",
        "isinstance",
        "object",
        "true",
        "false",
        "null",
    }
)
WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
EARLIER_CHARS = 12_000  # only this much text before the window is searched: the cost stays bounded
CHARS_PER_TOKEN = 4  # about what the embedded tokenizer averages on Python; lines over budget are dropped after


def identifiers(text: str) -> set[str]:
    return set(IDENTIFIER.findall(text)) - COMMON_NAMES


def _line_scores(earlier: str, wanted: set[str]) -> dict[int, set[str]]:
    """The identifiers of `wanted` each whole line of `earlier` holds, by the line's start offset.
    str.find per name, not a regex over every identifier: batch making calls this for every prefix."""
    found: dict[int, set[str]] = {}
    for name in wanted:
        position = earlier.find(name)
        while position != -1:
            end = position + len(name)
            if (position == 0 or earlier[position - 1] not in WORD_CHARS) and (
                end == len(earlier) or earlier[end] not in WORD_CHARS
            ):
                found.setdefault(earlier.rfind("\n", 0, position) + 1, set()).add(name)
            position = earlier.find(name, end)
    return found


def related_lines(earlier: str, line: str, max_chars: int) -> str:
    """Whole lines of `earlier` (the text before the window) that share identifiers with `line`
    (the cursor's line up to the cursor), best first by distinct shared names, ties to the
    line nearer the cursor, kept within `max_chars` and joined in their original order."""
    if len(earlier) > EARLIER_CHARS:
        earlier = earlier[-EARLIER_CHARS:]
        earlier = earlier[earlier.find("\n") + 1 :]  # the first line is cut: not a whole line
    wanted = identifiers(line)
    if not wanted or max_chars <= 0:
        return ""
    scores, ends = _line_scores(earlier, wanted), {}
    for start in scores:
        newline = earlier.find("\n", start)
        if newline != -1:  # the last line of `earlier` runs on into the window: not a whole line
            ends[start] = newline + 1
    ranked = sorted(ends, key=lambda start: (len(scores[start]), start), reverse=True)
    chosen, used = [], 0
    for start in ranked:
        size = ends[start] - start
        if used + size <= max_chars:
            chosen.append(start)
            used += size
    return "".join(earlier[start : ends[start]] for start in sorted(chosen))


def context_ids(tokenizer, earlier: str, line: str, budget: int) -> list[int]:
    """Token ids of `related_lines`, at most `budget` of them: lines farthest up are dropped
    whole until the rest fits."""
    text = related_lines(earlier, line, budget * CHARS_PER_TOKEN)
    while text:
        ids = tokenizer.encode(text, add_special_tokens=False)
        if len(ids) <= budget:
            return ids
        text = text[text.find("\n") + 1 :]
    return []
