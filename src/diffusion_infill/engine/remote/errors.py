"""How a remote engine's server fails, importable without the HTTP client (engine.remote.client):
the language server catches it before any server is configured; and the server's own words made
fit for one line of an editor's message."""

from __future__ import annotations

import html
import re

SERVER_TEXT_CHARS = 160  # of a server's error text in a message: an HTML error page is not read in an editor
_MARKUP = re.compile(r"<[^>]*>")
_UNPRINTABLE = re.compile(r"[^\t\n\r\x20-\x7e\xa0-\U0010ffff]")


class RemoteError(RuntimeError):
    """The server could not be reached or answered with an error or nonsense; the message names its URL."""


class MalformedReply(ValueError):
    """A reply that parsed but does not hold what the API promises, or more than any request needs."""


def server_text(text: str, limit: int = SERVER_TEXT_CHARS) -> str:
    """A server's text on one line: markup and control characters removed, entities decoded,
    whitespace collapsed, at most `limit` characters."""
    plain = " ".join(_UNPRINTABLE.sub(" ", html.unescape(_MARKUP.sub(" ", text))).split())
    return plain if len(plain) <= limit else plain[: limit - 1].rstrip() + "…"
