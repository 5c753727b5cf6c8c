"""JSONC (VS Code settings, tsconfig): its `//` and `/* */` comments, and the text with them and its
trailing commas blanked out, offsets unchanged, for json.loads."""

from __future__ import annotations

from collections import Counter

from diffusion_infill.engine.repair.jsonfix.lexer import tokenize


def _unclosed_block(comment: str) -> bool:
    return comment.startswith("/*") and (len(comment) < 4 or not comment.endswith("*/"))


def comments(text: str) -> Counter:
    """The `//` and `/* */` comments in `text`, as written."""
    return Counter(token.text for token in tokenize(text) if token.kind == "comment")


def strip_jsonc(text: str) -> str:
    """JSONC as JSON: comments and trailing commas replaced by spaces (line breaks kept), so offsets into
    the result are offsets into `text`."""
    tokens = tokenize(text)
    structure = [token for token in tokens if token.kind not in ("space", "comment")]
    trailing = [
        comma
        for comma, following in zip(structure, structure[1:], strict=False)
        if comma.kind == "punct" and comma.text == "," and following.text in ("]", "}")
    ]
    # A block comment never closed runs to the end of the text: that is damage, not a comment.
    closed = [token for token in tokens if token.kind == "comment" and not _unclosed_block(token.text)]
    chars = list(text)
    for token in closed + trailing:
        chars[token.start : token.end] = [char if char in "\r\n" else " " for char in text[token.start : token.end]]
    return "".join(chars)


def dropped_comments(selected: str, fixed: str) -> int:
    """The comments of the selection (`//`, `/* */`, `#`) that its fix left out: what a JSON fix says it
    dropped (the command line's `dropped_comments`, the server's code action title)."""
    if not ("/" in selected or "#" in selected):
        return 0

    def found(text: str) -> Counter:
        return Counter(token.text for token in tokenize(text) if token.kind in ("comment", "hash"))

    return sum((found(selected) - found(fixed)).values())
