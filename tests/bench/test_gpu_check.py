"""The GPU check (bench.gpu_check) in its CPU-sized form: every format and experts implementation
gets a row with its times, or the reason it cannot run, and the JSON line says the same."""

from __future__ import annotations

import json

from diffusion_infill.bench.gpu_check import IMPLEMENTATIONS, main


def test_the_small_shape_measures_every_format_and_implementation(capsys):
    assert main(["--small", "--context", "16", "--completions", "1", "--steps", "2"]) == 0
    out = capsys.readouterr().out
    rows = json.loads(out.splitlines()[-1])["rows"]
    assert [(r["format"], r["experts"]) for r in rows] == [
        (f, e) for f, names in IMPLEMENTATIONS.items() for e in names
    ]
    ran = {(r["format"], r["experts"]) for r in rows if "fails" not in r}
    assert ran >= {("bfloat16", "grouped_mm"), ("bfloat16", "sorted"), ("int4", "sorted")}
    for row in rows:
        if "fails" not in row:
            assert 0 < row["pass_ms_p50"] <= row["completion_ms_p50"] <= row["completion_ms_p95"]
    assert out.count("\n| ") == len(rows) + 2  # the header and its rule, then a line a row
