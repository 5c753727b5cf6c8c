"""`exit` ends the server at once, even while a large document's diagnostics are being computed, and
the diagnostics process with it."""

from __future__ import annotations

import asyncio

import pytest
from commands import serve_command
from lsprotocol import types
from processes import WORKER, appears, children, running
from pygls.lsp.client import LanguageClient

from diffusion_infill.bench.big import broken_json_line
from tests.lsp.lsp_client import Editor, capabilities

# Every record damaged, just under the size limit for JSON diagnostics: computing them keeps the
# diagnostics process busy for seconds (about 5 on the project's 2-core machine); an exit that
# waited for it, or a diagnostics process that outlived the server until it finished, would take that long.
SLOW_TO_DIAGNOSE = broken_json_line(14_000_000, damage_every=1)
PROMPTLY = 2  # seconds: far more than a process needs to end, far less than the computation takes


async def computing(stderr: asyncio.StreamReader, uri: str) -> None:
    """Returns once the server's log (-v) says `uri`'s diagnostics are being computed: the text has
    been sent to the diagnostics process."""
    while f"diagnosing {uri} " not in (await stderr.readline()).decode():
        pass
    while "sent to the diagnostics process" not in (await stderr.readline()).decode():
        pass


@pytest.mark.parametrize("shut_down", [True, False], ids=["shutdown-then-exit", "exit-alone"])
async def test_exit_during_a_long_diagnostic_ends_the_process_and_the_diagnostics_process(tmp_path, shut_down):
    """Without a shutdown request first nothing stops the computation: the diagnostics process ends
    because the server is gone."""
    client = LanguageClient("exit-test", "1")  # not pytest-lsp's, which reads the server's stderr itself
    await client.start_io(*serve_command(None, tmp_path / "t.json", verbose=True))
    process = client._server
    await client.initialize_async(
        types.InitializeParams(
            capabilities=capabilities(),
            initialization_options={"diffusionInfill": {"model": str(tmp_path / "no-model")}},
        )
    )
    uri = Editor(client).open(SLOW_TO_DIAGNOSE, "json", ".json")
    await asyncio.wait_for(computing(process.stderr, uri), 60)
    helpers = children(process.pid)  # the diagnostics process, and multiprocessing's resource tracker
    assert any(WORKER in command for command in helpers.values()), helpers
    if shut_down:
        await client.shutdown_async(None)
    client.exit(None)
    try:
        assert await asyncio.wait_for(process.wait(), PROMPTLY) == (0 if shut_down else 1)
        # The end of its stderr: every process that shares it (the server's children too) has ended.
        rest = (await asyncio.wait_for(process.stderr.read(), PROMPTLY)).decode()
        assert "Traceback" not in rest and "leaked" not in rest, rest
        assert await appears(lambda: not any(running(pid) for pid in helpers), PROMPTLY), helpers
    finally:
        if process.returncode is None:
            process.kill()
        await client.stop()
