"""diffusion_infill.bench.big on small documents: it drives a real server session and prints its JSON line."""

from __future__ import annotations

import json
import subprocess
import sys


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
