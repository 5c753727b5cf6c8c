"""scripts/typing_bench.py: its own logic with no editor (the keys it types, one pace's row from the per-key
times, the server's -v log read for requests and runs, its command line's bad input), and one VS Code run (slow)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "typing_bench.py"
spec = importlib.util.spec_from_file_location("typing_bench", SCRIPT)
typing_bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(typing_bench)


def test_the_lines_are_typed_a_character_a_key_with_a_new_line_and_its_indent_cleared_between():
    keys = typing_bench.key_sequence(["  a(", "  b"])
    assert keys == [" ", " ", "a", "(", typing_bench.NEW_LINE, typing_bench.CLEAR_INDENT, " ", " ", "b"]
    assert typing_bench.editor_keys(keys, "nvim")[4:6] == ["Enter", "C-u"]  # tmux's names
    assert typing_bench.editor_keys(keys, "vscode")[4:6] == ["Enter", "Control+Backspace"]  # Playwright's
    assert typing_bench.editor_keys(keys, "vscode")[:4] == [" ", " ", "a", "("]


def test_the_task_is_the_body_of_fill_which_wrap_has_a_few_lines_up():
    document, typed = typing_bench.typing_task()
    assert typed[0] in document.split("\n")  # the first line the file already holds
    assert typed == ["    w = TextWrapper(width=width, **kwargs)", "    return w.fill(text)"]
    assert len(typing_bench.key_sequence(typed)) == 67  # 65 characters, a new line and its indent cleared


def test_a_row_counts_the_keys_with_ghost_text_and_takes_nearest_rank_percentiles_of_their_times():
    shown = [None, 10.0, 200.0, None, 30.0, 20.0]
    row = typing_bench.summary("vscode", 150, shown, requests=4, runs=2)
    assert row == {
        "editor": "vscode",
        "pace_ms": 150,
        "keys": 6,
        "keys_with_ghost": 4,
        "key_to_ghost_ms_p50": 30.0,  # 10, 20, 30, 200: the rank round(0.5 * 3) = 2
        "key_to_ghost_ms_p95": 200.0,
        "requests": 4,
        "runs": 2,
        "ghost_keys": [1, 2, 4, 5],
    }
    assert typing_bench.summary("nvim", 100, [None, None], 0, 0)["key_to_ghost_ms_p50"] is None


# As VS Code's output log holds the server's -v lines (lsp/server.py's inline_completion, lsp/completion/worker.py's
# _complete), copied from a run of the benchmark, shortened.
LOG = """\
2026-12-07 11:28:10.477 [error] 2026-12-07 11:28:10,476 diffusion_infill.lsp.server DEBUG inlineCompletion \
file:///w/typed.py 395:28 automatic
2026-12-07 11:28:10.593 [error] 2026-12-07 11:28:10,593 diffusion_infill.lsp.completion.worker DEBUG completion 14 \
finished after 0 denoising steps; totals: 26 steps in 14 completions
2026-12-07 11:28:10.665 [error] 2026-12-07 11:28:10,665 pygls.protocol.json_rpc DEBUG Request \
'textDocument/inlineCompletion' received
2026-12-07 11:28:10.666 [error] 2026-12-07 11:28:10,666 diffusion_infill.lsp.server DEBUG inlineCompletion \
file:///w/typed.py 395:29 automatic
2026-12-07 11:28:11.883 [error] 2026-12-07 11:28:11,883 diffusion_infill.lsp.completion.worker DEBUG completion 15 \
cancelled after 1 denoising steps; totals: 27 steps in 15 completions
2026-12-07 11:28:12.185 [error] 2026-12-07 11:28:12,185 diffusion_infill.lsp.completion.worker DEBUG completion 16 \
finished after 5 denoising steps; totals: 32 steps in 16 completions
2026-12-07 11:28:12.246 [error] 2026-12-07 11:28:12,245 diffusion_infill.lsp.server DEBUG inlineCompletion \
file:///w/typed.py 396:0 invoked
"""


def test_the_log_gives_the_requests_and_the_runs_that_took_a_denoising_step_finished_or_cancelled():
    assert typing_bench.server_counts(LOG) == (3, 2)
    assert typing_bench.server_counts("") == (0, 0)


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_bad_arguments_are_one_line_and_exit_2():
    paces = bench("--paces", "100,fast")
    assert paces.returncode == 2 and paces.stderr == "--paces: not a list of integers: 100,fast\n"
    own = bench("--editor", "vscode", "--own")
    assert own.returncode == 2 and own.stderr == "--own: Neovim's plugin only\n"


@pytest.mark.slow
def test_in_vs_code_the_rest_of_the_call_the_file_has_shows_inside_the_brackets_vs_code_closed(tmp_path):
    """The benchmark end to end at 150 ms a key (code-server, the packaged .vsix, default settings): every key
    is counted, the server is asked, and ghost text shows between `TextWrapper(` and the `)` VS Code typed
    (keys 19-27: before document drafts held no closer there, none did)."""
    if why := typing_bench.code_server.missing():
        pytest.skip(why)
    row = typing_bench.run_vscode(150, typing_bench.ROOT, tmp_path)
    assert row["keys"] == 67 and row["requests"] > 0, row
    assert set(row["ghost_keys"]) & set(range(19, 28)), row
