"""diffusion_infill.lsp.diagnostics.Publisher on its own: which versions a burst of edits computes."""

from __future__ import annotations

import asyncio
import threading
from unittest import mock

from lsprotocol import types

from diffusion_infill.bench.big import broken_json_line
from diffusion_infill.engine.repair import jsonfix
from diffusion_infill.lsp import diagnostics
from diffusion_infill.lsp.documents import Documents


class Server:
    """What the publisher uses of InfillServer; records what it would send."""

    encoding = "utf-16"

    def __init__(self) -> None:
        self.documents = Documents()
        self.sent: list[types.PublishDiagnosticsParams] = []

    def text_document_publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        self.sent.append(params)


async def test_a_burst_of_edits_computes_and_publishes_the_last_version_only():
    server = Server()
    publisher = diagnostics.Publisher(server)
    document = server.documents.open("file:///burst.json", "json", 1, '{"a": ')
    with mock.patch.object(diagnostics, "diagnose", wraps=diagnostics.diagnose) as diagnose:
        for version in range(1, 11):  # edits that arrive faster than the debounce delay
            document.text, document.version = f'{{"a": {version}', version
            publisher.schedule(document)
        await publisher._pending[document.uri]
    assert [call.args[0].version for call in diagnose.call_args_list] == [10]
    assert [params.version for params in server.sent] == [10] and server.sent[0].diagnostics
    publisher.shutdown()


async def test_a_result_for_a_version_the_document_no_longer_has_is_dropped():
    server = Server()
    publisher = diagnostics.Publisher(server)
    document = server.documents.open("file:///changed.json", "json", 1, '{"a": ')
    diagnose = diagnostics.diagnose

    def diagnose_then_edit(snapshot, encoding, cancelled):
        document.version = 2  # an edit that did not go through schedule(): only the version check can notice
        return diagnose(snapshot, encoding, cancelled)

    with mock.patch.object(diagnostics, "diagnose", side_effect=diagnose_then_edit):
        publisher.schedule(document)
        await publisher._pending[document.uri]
    assert server.sent == []
    publisher.shutdown()


def test_thousands_of_problems_are_capped_with_one_that_counts_the_rest():
    text = "[" + ",".join(['{"a": [1, 2 3]}'] * 1_000) + "]"
    document = Documents().open("file:///many.json", "json", 1, text)
    published = diagnostics.diagnose(document, "utf-16")
    assert len(published) == diagnostics.MAX_ITEMS + 1
    rest = len(jsonfix.damage(text)) - diagnostics.MAX_ITEMS
    assert rest > 600 and published[-1].message.startswith(f"{rest:,} more problems from here on are not listed")
    assert [d.range.start.character for d in published] == sorted(d.range.start.character for d in published)


async def test_a_newer_version_stops_the_computation_of_an_older_one():
    server = Server()
    publisher = diagnostics.Publisher(server)
    document = server.documents.open("file:///big.json", "json", 1, broken_json_line(6_000_000, damage_every=1))
    started, ended = threading.Event(), []
    damage = jsonfix.damage

    def damage_and_record(text, cancelled):
        started.set()
        try:
            found = damage(text, cancelled)
        except jsonfix.Cancelled:
            ended.append("cancelled")
            raise
        ended.append(len(found))
        return found

    with mock.patch.object(jsonfix, "damage", side_effect=damage_and_record):
        publisher.schedule(document)
        assert await asyncio.get_running_loop().run_in_executor(None, started.wait, 30), "never started"
        document.text, document.version = '{"a": 1', 2
        publisher.schedule(document)
        await publisher._pending[document.uri]
    assert ended == ["cancelled", 2]  # the first stopped midway (it takes seconds), the second ran (2 problems)
    assert [params.version for params in server.sent] == [2]
    publisher.shutdown()
