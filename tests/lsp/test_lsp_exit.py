"""`exit` ends the server at once, even while a large document's diagnostics are being computed."""

from __future__ import annotations

import asyncio

from commands import serve_command
from lsp_client import Editor, capabilities
from lsprotocol import types
from pygls.lsp.client import LanguageClient

from diffusion_infill.bench.big import broken_json_line

# Every record damaged: computing its diagnostics keeps the diagnostics thread busy for many
# seconds (about 12 on the project's 2-core machine); an exit that waited for it would take that long.
SLOW_TO_DIAGNOSE = broken_json_line(6_000_000, damage_every=1)
PROMPTLY = 5  # seconds: far more than a process needs to end, far less than the computation takes


async def diagnosing(stderr: asyncio.StreamReader, uri: str) -> None:
    """Returns once the server's log (-v) says it started computing `uri`'s diagnostics."""
    while f"diagnosing {uri} " not in (await stderr.readline()).decode():
        pass


async def test_exit_during_a_long_diagnostic_ends_the_process(tmp_path):
    client = LanguageClient("exit-test", "1")  # not pytest-lsp's, which reads the server's stderr itself
    await client.start_io(*serve_command(None, tmp_path / "t.json", verbose=True))
    process = client._server
    await client.initialize_async(types.InitializeParams(
        capabilities=capabilities(), initialization_options={"diffusionInfill": {"model": str(tmp_path / "no-model")}}))
    uri = Editor(client).open(SLOW_TO_DIAGNOSE, "json", ".json")
    await asyncio.wait_for(diagnosing(process.stderr, uri), 60)
    await client.shutdown_async(None)
    client.exit(None)
    try:
        assert await asyncio.wait_for(process.wait(), PROMPTLY) == 0
    finally:
        if process.returncode is None:
            process.kill()
        await client.stop()
