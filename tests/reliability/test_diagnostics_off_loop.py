"""JSON and Markdown diagnostics through the real server: computed off the event loop, for
the last version of a burst of edits, never published for a version the document no
longer has, and skipped (with one logMessage) for a document over the size limit.

Assertions are on the order of the server's messages, never on time.
"""

from __future__ import annotations

import json

import pytest
from raw_server import RawServer, encode, frame, start_server

from diffusion_infill.lsp.diagnostics.publisher import MAX_CHARS, MAX_JSON_CHARS

PUBLISH = "textDocument/publishDiagnostics"
RECORDS = json.dumps([{"id": i, "name": f"item {i}", "tags": ["a", "b"]} for i in range(40_000)], indent=1)
# Cut mid-record just under the limit: the largest broken JSON the server diagnoses.
LARGE_BROKEN_JSON = RECORDS[: MAX_CHARS - 1]
assert len(RECORDS) > MAX_CHARS


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = start_server(None, tmp_path_factory.mktemp("diagnostics"))  # diagnostics need no model
    yield server
    server.stop()


def did_open(uri: str, text: str, language: str = "json") -> bytes:
    return frame(
        encode(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}},
            }
        )
    )


def did_change(uri: str, version: int, text: str) -> bytes:
    return frame(
        encode(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didChange",
                "params": {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
            }
        )
    )


def published(server: RawServer, uri: str, version: int, start: int = 0) -> int:
    """The index of the first publishDiagnostics for `uri` at `version`, from message `start` on."""
    message = server.wait_for(
        lambda m: m.get("method") == PUBLISH and m["params"]["uri"] == uri and m["params"].get("version") == version,
        start,
    )
    return server.messages.index(message)


def answered(server: RawServer, uri: str) -> int:
    """Asks for code actions at an empty range of `uri` (answered without the model): the answer's index."""
    where = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    msg_id = server.request(
        "textDocument/codeAction", {"textDocument": {"uri": uri}, "range": where, "context": {"diagnostics": []}}
    )
    answer = server.response(msg_id)
    assert "result" in answer, answer
    return server.messages.index(answer)


def publishes(server: RawServer, uri: str, start: int = 0) -> list[dict]:
    return [m["params"] for m in server.messages[start:] if m.get("method") == PUBLISH and m["params"]["uri"] == uri]


def test_requests_are_answered_while_a_large_json_document_is_diagnosed(server):
    small, large = "file:///diagnostics/small.json", "file:///diagnostics/large.json"
    start = len(server.messages)
    # One process computes diagnostics in order: once the small document's arrive, the large one's are under way.
    server.write(did_open(small, '{"a": 1}') + did_open(large, LARGE_BROKEN_JSON))
    published(server, small, 1, start)
    answer = answered(server, small)
    assert answer < published(server, large, 1, start), "the request waited for the large document's diagnostics"
    assert publishes(server, large, start)[-1]["diagnostics"], "the large document is broken"


def test_a_burst_of_edits_never_publishes_a_version_older_than_the_document(server):
    uri = "file:///diagnostics/burst.json"
    versions = range(2, 22)
    texts = {version: RECORDS[: 200_000 + version] for version in versions}  # each one broken differently
    texts[versions[-1]] = '{"valid": true}'
    start = len(server.messages)
    server.write(did_open(uri, RECORDS[:200_000]) + b"".join(did_change(uri, v, texts[v]) for v in versions))
    everything_read = answered(server, uri)  # the server has applied every change before it answers
    last = published(server, uri, versions[-1], start)
    sent = [params["version"] for params in publishes(server, uri, start)]
    assert sent == sorted(sent), f"an older version was published after a newer one: {sent}"
    assert all(params["version"] == versions[-1] for params in publishes(server, uri, everything_read)), sent
    assert server.messages[last]["params"]["diagnostics"] == [], "the last version is valid JSON"


@pytest.mark.parametrize(("language", "limit"), [("json", MAX_JSON_CHARS), ("markdown", MAX_CHARS)])
def test_a_document_over_the_limit_gets_no_diagnostics_and_one_log_message(server, language, limit):
    uri = f"file:///diagnostics/over-the-limit.{language}"
    start = len(server.messages)
    for version, frames in enumerate(
        (did_open(uri, "x" * (limit + 1), language), did_change(uri, 2, "x" * (limit + 2))), start=1
    ):
        server.write(frames)
        assert server.messages[published(server, uri, version, start)]["params"]["diagnostics"] == []
    told = [
        m for m in server.messages[start:] if m.get("method") == "window/logMessage" and uri in m["params"]["message"]
    ]
    assert len(told) == 1, told
    assert f"{limit:,}" in told[0]["params"]["message"]
