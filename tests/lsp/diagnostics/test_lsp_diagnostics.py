"""diffusion_infill.lsp.diagnostics.publisher.Publisher on its own, with its real diagnostics process: which
versions a burst of edits computes, what a newer version stops, what is published."""

from __future__ import annotations

import asyncio
import logging
import os
import signal

import pytest
from lsprotocol import types
from processes import appears, running, workers

from diffusion_infill.bench.big import broken_json_line
from diffusion_infill.engine.repair import jsonfix
from diffusion_infill.lsp.diagnostics import publisher as diagnostics
from diffusion_infill.lsp.text.documents import Document, Documents
from diffusion_infill.lsp.text.rope import Rope

# Every record damaged: seconds of computing (about 2 on the project's 2-core machine), so a
# newer version arrives while it runs.
SLOW_JSON = broken_json_line(6_000_000, damage_every=1)
# The Markdown rules are never stopped midway: about a second here, so an edit arrives meanwhile.
SLOW_MARKDOWN = "".join(f"# Heading {i}\n\n* item\n  * nested *emphasis\n\n```\ncode\n" for i in range(20_000))


class Server:
    """What the publisher uses of InfillServer; records what it would send."""

    encoding = "utf-16"

    def __init__(self) -> None:
        self.documents = Documents()
        self.sent: list[types.PublishDiagnosticsParams] = []
        self.logged: list[str] = []

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        self.sent.append(params)

    def window_log_message(self, params: types.LogMessageParams) -> None:
        self.logged.append(params.message)


@pytest.fixture
def server():
    return Server()


@pytest.fixture
def publisher(server, caplog):
    caplog.set_level(logging.DEBUG, logger=diagnostics.__name__)
    publisher = diagnostics.Publisher(server)
    yield publisher
    publisher.shutdown()


def logged(caplog, words: str) -> list[int]:
    """The versions of the log lines that begin with `words` ("diagnosing", "diagnosed", "stopped diagnosing")."""
    return [
        record.args[1]
        for record in caplog.records
        if record.name == diagnostics.__name__ and record.msg.startswith(words + " %s version")
    ]


async def until_logged(caplog, words: str, version: int) -> None:
    while version not in logged(caplog, words):
        await asyncio.sleep(0.01)


def edit(document: Document, text: str) -> None:
    document.text, document.version = Rope(text), document.version + 1


async def test_a_burst_of_edits_computes_and_publishes_the_last_version_only(server, publisher, caplog):
    document = server.documents.open("file:///burst.json", "json", 1, '{"a": ')
    for version in range(1, 11):  # edits that arrive faster than the debounce delay
        document.text, document.version = Rope(f'{{"a": {version}'), version
        publisher.schedule(document)
    await publisher._pending[document.uri]
    assert logged(caplog, "diagnosing") == [10] and logged(caplog, "diagnosed") == [10]
    assert [params.version for params in server.sent] == [10] and server.sent[0].diagnostics


async def test_a_result_for_a_version_the_document_no_longer_has_is_dropped(server, publisher, caplog):
    document = server.documents.open("file:///changed.md", "markdown", 1, SLOW_MARKDOWN)
    publisher.schedule(document)
    computing = publisher._pending[document.uri]
    await until_logged(caplog, "diagnosing", 1)
    edit(document, "# Valid\n")
    publisher.schedule(document)
    await computing  # not stopped: the Markdown rules ran to their end, for a version the document no longer has
    await publisher._pending[document.uri]
    assert logged(caplog, "diagnosed") == [1, 2]
    assert [params.version for params in server.sent] == [2]


def test_thousands_of_problems_are_capped_with_one_that_counts_the_rest():
    text = "[" + ",".join(['{"a": [1, 2 3]}'] * 1_000) + "]"
    document = Documents().open("file:///many.json", "json", 1, text)
    published = diagnostics.diagnose(document, "utf-16")
    assert len(published) == diagnostics.MAX_ITEMS + 1
    rest = len(jsonfix.damage(text)) - diagnostics.MAX_ITEMS
    assert rest > 600 and published[-1].message.startswith(f"{rest:,} more problems from here on are not listed")
    assert [d.range.start.character for d in published] == sorted(d.range.start.character for d in published)


async def test_a_newer_version_stops_the_computation_of_an_older_one(server, publisher, caplog):
    document = server.documents.open("file:///big.json", "json", 1, SLOW_JSON)
    publisher.schedule(document)
    await until_logged(caplog, "diagnosing", 1)
    edit(document, '{"a": 1')
    publisher.schedule(document)
    await publisher._pending[document.uri]
    assert logged(caplog, "stopped diagnosing") == [1] and logged(caplog, "diagnosed") == [2]
    assert [(params.version, len(params.diagnostics)) for params in server.sent] == [(2, 2)]


async def test_a_version_the_killed_worker_was_checking_gets_nothing_published_and_the_next_edit_is_diagnosed(
    server, publisher, caplog
):
    document = server.documents.open("file:///killed.json", "json", 1, '{"a": ')
    before = workers(os.getpid())  # other tests' workers, perhaps still ending
    publisher.schedule(document)
    await publisher._pending[document.uri]
    [worker] = workers(os.getpid()) - before
    edit(document, SLOW_JSON)
    publisher.schedule(document)
    await until_logged(caplog, "diagnosing", 2)
    os.kill(worker, signal.SIGKILL)
    await publisher._pending[document.uri]
    assert [r.levelno for r in caplog.records if r.levelno >= logging.WARNING] == [logging.ERROR]  # logged once
    edit(document, '{"b": ')
    publisher.schedule(document)
    await publisher._pending[document.uri]
    # version 2 was never checked: an empty list would tell the editor it has no problems
    assert [(params.version, bool(params.diagnostics)) for params in server.sent] == [(1, True), (3, True)]
    assert [message for message in server.logged if "could not check" in message] == [
        "diffusion-infill: could not check file:///killed.json version 2: the diagnostics process ended; "
        "the next edit checks it again"
    ]


async def test_shutdown_stops_the_running_computation_and_the_worker_ends(server, publisher, caplog):
    before = workers(os.getpid())
    document = server.documents.open("file:///shutdown.json", "json", 1, SLOW_JSON)
    publisher.schedule(document)
    computing = publisher._pending[document.uri]
    await until_logged(caplog, "diagnosing", 1)
    [worker] = await appears(lambda: workers(os.getpid()) - before, 30)
    publisher.shutdown()
    await computing
    assert logged(caplog, "stopped diagnosing") == [1] and server.sent == []
    assert await appears(lambda: not running(worker), 30), "the worker outlived its publisher"


async def test_a_document_closed_and_reopened_meanwhile_gets_none_of_the_old_texts_diagnostics(
    server, publisher, caplog
):
    document = server.documents.open("file:///reopened.md", "markdown", 1, SLOW_MARKDOWN)
    publisher.schedule(document)
    computing = publisher._pending[document.uri]
    await until_logged(caplog, "diagnosing", 1)
    server.documents.close(document.uri)
    publisher.forget(document)
    reopened = server.documents.open(document.uri, "markdown", 1, "# Valid\n")  # versions start again at 1
    publisher.schedule(reopened)
    await computing  # the Markdown rules run to their end: the same URI and version, another text
    await publisher._pending[document.uri]
    assert logged(caplog, "diagnosed") == [1, 1]
    assert [(params.version, len(params.diagnostics)) for params in server.sent] == [(None, 0), (1, 0)]


async def test_nothing_is_published_after_shutdown(server, publisher, caplog):
    document = server.documents.open("file:///late.md", "markdown", 1, SLOW_MARKDOWN)
    publisher.schedule(document)
    computing = publisher._pending[document.uri]
    await until_logged(caplog, "diagnosing", 1)
    publisher.shutdown()
    await computing
    assert logged(caplog, "diagnosed") == [1] and server.sent == []


async def test_a_worker_that_died_between_computations_is_replaced_before_the_next(server, publisher, caplog):
    document = server.documents.open("file:///idle.json", "json", 1, '{"a": ')
    before = workers(os.getpid())
    publisher.schedule(document)
    await publisher._pending[document.uri]
    [worker] = workers(os.getpid()) - before
    os.kill(worker, signal.SIGKILL)
    assert await appears(lambda: not running(worker), 30)
    edit(document, '{"b": ')
    publisher.schedule(document)
    await publisher._pending[document.uri]
    assert [(params.version, bool(params.diagnostics)) for params in server.sent] == [(1, True), (2, True)]
    assert [r.levelno for r in caplog.records if r.levelno >= logging.WARNING] == [logging.WARNING]


async def test_a_document_reopened_in_another_language_and_closed_leaves_nothing_to_fail(server, publisher, caplog):
    document = server.documents.open("file:///renamed.json", "json", 1, '{"a": ')
    publisher.schedule(document)
    plain = server.documents.open(document.uri, "plaintext", 2, "hi")
    publisher.schedule(plain)
    server.documents.close(plain.uri)
    publisher.forget(plain)
    await asyncio.sleep(2 * diagnostics.DEBOUNCE_S)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [] and server.sent == []


async def test_a_worker_that_stops_answering_is_replaced_the_version_checked_again_and_both_logged(server, caplog):
    """Issue 52 item 3, as the server's log and the client's log say it: the diagnostics process, held still
    (SIGSTOP, as a hung or swapping one is), overruns the deadline; a fresh one checks the same version."""
    caplog.set_level(logging.WARNING)
    publisher = diagnostics.Publisher(server, deadline=1)
    try:
        document = server.documents.open("file:///held.json", "json", 1, '{"a": ')
        before = workers(os.getpid())
        publisher.schedule(document)
        await publisher._pending[document.uri]  # the worker's start-up has a bound of its own
        [held] = workers(os.getpid()) - before
        os.kill(held, signal.SIGSTOP)
        edit(document, '{"b": ')
        publisher.schedule(document)
        overran = publisher._pending[document.uri]
        await overran
        while publisher._pending[document.uri] is overran:  # the check again is scheduled after this task ended
            await asyncio.sleep(0.01)
        await publisher._pending[document.uri]
        assert [(params.version, bool(params.diagnostics)) for params in server.sent] == [(1, True), (2, True)]
        message = (
            "diffusion-infill: could not check file:///held.json version 2: the diagnostics process gave no result "
            "within 1 s (--worker-timeout); it was replaced; checking it again"
        )
        assert [(r.name, r.getMessage()) for r in caplog.records if r.levelno >= logging.WARNING] == [
            (
                "diffusion_infill.lsp.diagnostics.process",
                "the diagnostics process gave no result within 1 s: killed; the next computation starts a new one",
            ),
            (diagnostics.__name__, message),
        ]
        assert server.logged == [message]
        assert await appears(lambda: not running(held), 10), "the held diagnostics process still runs"
    finally:
        publisher.shutdown()
