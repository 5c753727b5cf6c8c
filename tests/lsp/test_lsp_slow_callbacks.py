"""Nothing on the server's event loop takes 50 ms while its user works: a typing session through the
real server (a random-weight tiny model with a calibration, document drafts on and offered while typing
in a 73,000-character Python file thick with brackets, a select-all code action in a 1 MB
Markdown file, Fix JSON resolved, an acceptance counted), run with asyncio's debug mode and
`slow_callback_duration` at 50 ms; asyncio logs every callback that takes longer, and any such line
fails the test. The documents are opened before the watch starts.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from lsprotocol import types

from diffusion_infill.engine.completion.confidence import Calibration
from diffusion_infill.lsp.completion.telemetry import ACCEPT_COMMAND
from tests.lsp.action_client import FIX_JSON, FIX_MARKDOWN, code_actions, open_diagnosed, titled
from tests.lsp.lsp_client import Editor, capabilities, start, stop

# The CLI, with asyncio's threshold for a slow callback lowered from 100 ms and the server's
# stderr (where asyncio logs them) in the file SLOW_LOG names.
SERVE = (
    "import asyncio.base_events, os, sys; asyncio.base_events.BaseEventLoop.slow_callback_duration = 0.05; "
    "os.dup2(os.open(os.environ['SLOW_LOG'], os.O_WRONLY | os.O_CREAT | os.O_APPEND), 2); "
    "from diffusion_infill.cli.main import main; sys.exit(main())"
)
# Code thick with brackets, except around the cursor: typing a line that the plain code there repeats
# gets document drafts, and each draft's syntax check parses the bounded window (4,096 characters before
# the cursor, 1,024 after: plain code, 2 to 9 ms) on the loop. Checked in the whole window (32,768 and
# 8,192), with the brackets, most took 80 to 155 ms (a quiet machine).
CALLS = "    t(f(v[0]),(a,[b]),{k:v},g(i)[0],[[(c)]],(((d))),{k:[v]})\n"
PLAIN = "    total = total + value\n"
TYPED = "total = total + value"
SOURCE = "def collect(t, f, v, a, b, c, d, k, g, i, total, value):\n" + CALLS * 800 + PLAIN * 170
CURSOR_LINE = SOURCE.count("\n") - 1  # the end of the last plain line before the cursor
SOURCE += PLAIN * 45 + CALLS * 300


async def debug_server(model_dir, tmp_path, monkeypatch):
    """The real server in asyncio's debug mode, with its stderr in a file, initialized."""
    log = tmp_path / "stderr.log"
    monkeypatch.setenv("PYTHONASYNCIODEBUG", "1")
    monkeypatch.setenv("SLOW_LOG", str(log))
    command = [sys.executable, "-c", SERVE, "serve", "--telemetry", str(tmp_path / "t.json"), "--model", str(model_dir)]
    client, _ = await start(command, capabilities(["utf-16"]), {"diffusionInfill": {"documentDrafts": True}})
    return client, log


def slow_callbacks(log, start: int) -> list[str]:
    """asyncio's lines for callbacks over the threshold, written from `start` on."""
    with log.open("rb") as lines:
        lines.seek(start)
        return [line for line in lines.read().decode().splitlines() if "Executing" in line and " took " in line]


def calibrated(model_dir: Path, tmp_path: Path) -> Path:
    """A copy of the checkpoint `model_dir` with a calibration (every completion estimated at 0.5, offered
    from 0): the server answers an automatic request with a document draft only for a calibrated model."""
    model = tmp_path / "calibrated"
    shutil.copytree(model_dir, model)
    Calibration({}, 0.0, 0.0, "every completion: 0.5").save(model)
    return model


async def test_a_typing_session_runs_no_callback_of_50_ms_on_the_event_loop(tiny_model_dir, tmp_path, monkeypatch):
    # the tiny model judges no copied lines: the server offers document drafts itself, on its loop
    client, log = await debug_server(calibrated(tiny_model_dir, tmp_path), tmp_path, monkeypatch)
    editor = Editor(client)
    try:
        # Opening is left out: once per document, and pygls decodes a 1 MB message on the loop.
        documents = await _opened(editor)
        started = log.stat().st_size if log.exists() else 0
        await _work(editor, *documents)
    finally:
        await stop(client)
    assert slow_callbacks(log, started) == []


async def _opened(editor: Editor) -> tuple:
    """A 73,000-character Python file, a 1 MB Markdown file and a broken JSON one, with their diagnostics."""
    source = SOURCE
    python = editor.open(source)
    markdown = "".join(f"# Part {i}\n\n| a | b |\n|---|---|\n| 1 |\n\nSome *open text.\n\n" for i in range(20_000))
    markdown = markdown[:1_000_000]
    markdown_uri, problems = await open_diagnosed(editor, markdown, "markdown", ".md")
    whole = types.Range(types.Position(0, 0), types.Position(markdown.count("\n"), 0))
    json_uri, damage = await open_diagnosed(editor, '{"a": [1, 2,, 3}', "json", ".json")
    return python, source, markdown_uri, whole, problems, json_uri, damage


async def _work(editor: Editor, python, source, markdown_uri, whole, problems, json_uri, damage) -> None:
    """Typing with completions and document drafts, an acceptance, a select-all's code actions in the
    Markdown file, a resolved Fix JSON: what an editor asks while its user works."""
    line = CURSOR_LINE  # the window's 32,768 characters before, 8,192 after
    editor.insert(python, types.Position(line, len(PLAIN) - 1), "\n    ")
    for typed, char in enumerate(TYPED):  # a line the file has: document drafts, each checked on the loop
        editor.insert(python, types.Position(line + 1, 4 + typed), char)
        await editor.request(python, types.Position(line + 1, 5 + typed))
    await editor.client.workspace_execute_command_async(types.ExecuteCommandParams(ACCEPT_COMMAND, ["automatic"]))
    assert titled(await code_actions(editor, markdown_uri, whole, problems), FIX_MARKDOWN)
    fix = titled(await code_actions(editor, json_uri, damage[0].range, damage), FIX_JSON)
    assert (await editor.client.code_action_resolve_async(fix)).edit is not None
