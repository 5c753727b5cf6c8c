"""Large inputs through the real server: a 10 MB file, a line of 50,000 characters, a binary
file, a frame that announces a terabyte. The engine sees a bounded window (diffusion_infill.lsp.text.window),
memory stays bounded, and every answer comes (HANG_S turns a hang into a failure; no test
here measures time).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from raw_server import HANG_S, RawServer, rss_bytes, start_server

from diffusion_infill.engine.completion.prefix import encode_context
from diffusion_infill.lsp.text import window

MB = 2**20
SOURCE = (Path(__file__).parents[2] / "src" / "diffusion_infill" / "engine" / "syntax_check.py").read_text()
TEN_MB = (SOURCE * (10 * MB // len(SOURCE) + 1))[: 10 * MB]
LONG_LINE = ("values = [" + ", ".join(str(i) for i in range(20_000)))[:50_000]
# What an editor shows for a binary file: undecodable bytes as U+FFFD, NULs and control characters kept.
BINARY = random.Random(0).randbytes(MB).decode("utf-8", "replace")
RSS_GROWTH_BOUND = 200 * MB  # the document itself, its line table and JSON copies; the model is loaded before


@pytest.fixture(scope="module")
def server(tiny_model_dir, tmp_path_factory):
    server = start_server(tiny_model_dir, tmp_path_factory.mktemp("large"))
    yield server
    server.stop()


class Documents:
    def __init__(self, server: RawServer):
        self.server, self.count = server, 0

    def open(self, text: str, language: str = "python") -> str:
        self.count += 1
        uri = f"file:///reliability/large{self.count}.py"
        self.server.notify(
            "textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}}
        )
        return uri

    def complete(self, uri: str, line: int, character: int) -> list:
        """The answer, which must come with a final draft before it."""
        start = len(self.server.messages)
        answer = self.server.response(
            self.server.request(
                "textDocument/inlineCompletion",
                {
                    "textDocument": {"uri": uri},
                    "position": {"line": line, "character": character},
                    "context": {"triggerKind": 2},
                },
            )
        )
        assert isinstance(answer.get("result"), list), answer
        finals = [
            m
            for m in self.server.messages[start:]
            if m.get("method") == "infill/draft" and m["params"]["uri"] == uri and m["params"]["final"]
        ]
        assert finals, "the engine did not run"
        return answer["result"]


@pytest.fixture(scope="module")
def documents(server) -> Documents:
    documents = Documents(server)
    documents.complete(documents.open("x = 1\n"), 1, 0)  # the model is loaded: later RSS is about documents
    return documents


@pytest.mark.slow  # a 10 MB document, three rounds
def test_a_10_mb_file_is_completed_anywhere_and_memory_stays_bounded(server, documents):
    before = rss_bytes(server.pid)
    last_line = TEN_MB.count("\n")
    peaks = []
    for _ in range(3):  # open, complete, edit, close: the same memory each round, nothing kept
        uri = documents.open(TEN_MB)
        for line in (last_line, last_line // 2, 1):
            documents.complete(uri, line, 4)
        server.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": 2},
                "contentChanges": [
                    {
                        "range": {
                            "start": {"line": last_line // 2, "character": 0},
                            "end": {"line": last_line // 2, "character": 0},
                        },
                        "text": "x = ",
                    }
                ],
            },
        )
        documents.complete(uri, last_line // 2, 4)
        peaks.append(rss_bytes(server.pid))
        server.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert max(peaks) - before < RSS_GROWTH_BOUND, f"RSS grew by {(max(peaks) - before) // MB} MB"
    assert peaks[-1] - peaks[0] < 50 * MB, f"each 10 MB file left memory behind: {[p // MB for p in peaks]} MB"


def test_a_line_of_50000_characters(documents):
    uri = documents.open(LONG_LINE + "\n")
    for character in (50_000, 25_000, 0, 10**6):  # past the end of the line means its end
        documents.complete(uri, 0, character)


def test_the_line_after_a_line_longer_than_the_model_reads(documents, tiny_loaded):
    """The model's window ended at the newline right before the cursor and was empty: the
    encoder got no token and the first denoising step raised (a TypeError from the cache)."""
    documents.complete(documents.open(LONG_LINE + "\n"), 1, 0)
    tokenizer, ids = tiny_loaded.tokenizer, tiny_loaded.ids
    assert encode_context(tokenizer, ids.bos, LONG_LINE + "\n", "", 64, 4).prefix_ids


def test_a_binary_file(server, documents):
    uri = documents.open(BINARY)
    lines = BINARY.count("\n") + BINARY.count("\r") - BINARY.count("\r\n")
    for line in (0, lines // 2, lines):
        documents.complete(uri, line, 0)
    selection = {"start": {"line": 0, "character": 0}, "end": {"line": 3, "character": 0}}
    actions = server.response(
        server.request(
            "textDocument/codeAction",
            {"textDocument": {"uri": uri}, "range": selection, "context": {"diagnostics": []}},
        )
    )
    assert isinstance(actions.get("result"), list), actions


def test_a_frame_announcing_a_terabyte_ends_the_server_with_an_error_that_says_why(tiny_model_dir, tmp_path):
    """Where such a frame ends cannot be known: the server used to read what followed as its body (in
    1 MB chunks), so a client that sent less than it announced got no answer to anything, ever, from a
    server still running. Now it exits with status 1 at once, saying why on stderr, and allocates nothing."""
    server = start_server(tiny_model_dir, tmp_path)
    try:
        server.write(b"Content-Length: 1000000000000\r\n\r\n" + b"x" * 1000)
        assert server.process.wait(HANG_S) == 1
        server.kill()  # its stderr read to the end: every line is in the log
        assert "a frame announces 1,000,000,000,000 bytes, more than the 268,435,456 a message may have" in server.log
        # the model's load, started by initialize, may end after the session: quietly
        assert "Traceback" not in server.log, server.log
    finally:
        server.kill()


# The window itself


@settings(max_examples=200, derandomize=True, database=None, deadline=None)
@given(
    prefix=st.text(alphabet="ab\n", max_size=300),
    suffix=st.text(alphabet="ab\n", max_size=300),
    before=st.integers(1, 100),
    after=st.integers(1, 100),
)
def test_the_window_is_bounded_and_cut_at_line_starts(prefix, suffix, before, after):
    kept_before, kept_after = window.bounded(prefix, suffix, before, after)
    assert prefix.endswith(kept_before) and suffix.startswith(kept_after)
    assert len(kept_before) == len(prefix) if len(prefix) <= before else 0 < len(kept_before) <= before
    assert len(kept_after) == len(suffix) if len(suffix) <= after else 0 < len(kept_after) <= after
    if len(prefix) > before and "\n" in prefix[-before:-1]:
        assert prefix[: len(prefix) - len(kept_before)].endswith("\n"), "the window starts mid-line"
    if len(suffix) > after and "\n" in suffix[1:after]:
        assert kept_after.endswith("\n"), "the window ends mid-line"
