"""Nothing on the server's event loop takes 50 ms while its user works: a typing session through the
real server (a random-weight tiny model with a calibration, document drafts on and offered at every
keystroke in a 98,000-character Python file thick with brackets, a select-all code action in a 1 MB
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
# A line of code thick with brackets, repeated: typing it again gets a document draft at every keystroke,
# and the draft's syntax check of the whole window (40,000 characters) would take 90 ms on the loop
# (quiet machine), its bounded window (5,120 characters) 11 ms.
CALLS = "    totals.append(scale(values[0], (low, [high]), {key: value}, pick(index)[0]))\n"
TYPED = "totals.append(scale(values"


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
    """A 98,000-character Python file, a 1 MB Markdown file and a broken JSON one, with their diagnostics."""
    source = "def collect(values, low, high, key, value, index):\n    totals = []\n" + CALLS * 1_200
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
    line = source.count("\n", 0, len(source) // 2)  # the window's 32,768 characters before, 8,192 after
    editor.insert(python, types.Position(line, len(CALLS) - 1), "\n    ")
    for typed, char in enumerate(TYPED):  # a line the file has: a document draft at every keystroke
        editor.insert(python, types.Position(line + 1, 4 + typed), char)
        await editor.request(python, types.Position(line + 1, 5 + typed))
    await editor.client.workspace_execute_command_async(types.ExecuteCommandParams(ACCEPT_COMMAND, ["automatic"]))
    assert titled(await code_actions(editor, markdown_uri, whole, problems), FIX_MARKDOWN)
    fix = titled(await code_actions(editor, json_uri, damage[0].range, damage), FIX_JSON)
    assert (await editor.client.code_action_resolve_async(fix)).edit is not None
