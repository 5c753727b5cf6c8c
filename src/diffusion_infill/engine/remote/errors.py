"""How a remote engine's server fails, importable without the HTTP client (engine.remote.client):
the language server catches it before any server is configured."""

from __future__ import annotations


class RemoteError(RuntimeError):
    """The server could not be reached or answered with an error or nonsense; the message names its URL."""
