"""`diffusion-infill complete PATH:LINE:COL` on the embedded model: the JSON contract,
and clear errors for bad locations and missing models."""

from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from diffusion_infill.cli.complete import Location, LocationError
from diffusion_infill.cli.main import SAMPLE, main
from diffusion_infill.engine.loading import EMBEDDED_MODEL
from diffusion_infill.engine.requests import InfillRequest
from diffusion_infill.lsp.completion.items import placement
from diffusion_infill.lsp.text.window import MAX_LINE

JSON_KEYS = {"text", "steps", "drafts", "timings_ms", "valid", "confidence", "shown", "threshold", "source"}
CALIBRATED_THRESHOLD = json.loads((EMBEDDED_MODEL / "confidence.json").read_text())["threshold"]


def test_json_output_is_one_object_on_the_last_line(console_script):
    done = subprocess.run(
        [console_script, "complete", f"{SAMPLE}:11:37", "--json"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(result) == JSON_KEYS
    assert isinstance(result["text"], str) and "\n" not in result["text"]  # mid-line: single-line by default
    assert result["steps"] >= 1
    assert all(isinstance(draft, str) for draft in result["drafts"])
    # one draft per denoising step; a line copied from the code and judged is one draft, in a pass or two
    assert 1 <= len(result["drafts"]) <= result["steps"] + 1
    assert result["source"] in ("model", "revised")
    assert set(result["timings_ms"]) == {"prefill", "first_draft", "total"}
    assert 0 <= result["timings_ms"]["first_draft"] <= result["timings_ms"]["total"]
    assert result["valid"] is True
    assert 0 <= result["confidence"] <= 1  # the embedded model is calibrated
    assert result["threshold"] == CALIBRATED_THRESHOLD
    assert result["shown"] is (result["confidence"] >= CALIBRATED_THRESHOLD)


def test_shown_is_what_the_servers_gate_does_at_its_default_settings(capsys):
    """The README's example: printed (complete prints every completion by default), and at its
    confidence an editor would show nothing while typing."""
    assert main(["complete", f"{SAMPLE}:10:24", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["text"] and result["confidence"] < CALIBRATED_THRESHOLD
    assert (result["shown"], result["threshold"]) == (False, CALIBRATED_THRESHOLD)
    assert main(["complete", f"{SAMPLE}:10:24", "--json", "--min-confidence", "0"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert (result["shown"], result["threshold"]) == (True, 0)  # a minConfidence set: that one


def test_the_confidence_is_the_one_the_server_gates_on(capsys):
    """The same estimate: what diffusion_infill.engine.completion.confidence computes for the final draft."""
    import torch

    from diffusion_infill.engine.factory import create_engine
    from diffusion_infill.engine.loading import load
    from diffusion_infill.engine.settings import EngineSettings

    assert main(["complete", f"{SAMPLE}:11:37", "--json", "--max-steps", "2"]) == 0
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    prefix, suffix = Location(SAMPLE, 11, 37).split(SAMPLE.read_text())
    engine = create_engine(load(None, "cpu"), EngineSettings().with_overrides(max_steps=2))
    torch.manual_seed(0)  # the command's --seed
    final = list(engine.complete(InfillRequest(prefix, suffix, "python", invoked=True)))[-1]
    assert (printed["text"], printed["confidence"]) == (final.text, round(final.confidence, 4))


def test_int8_weights_complete_the_readme_example_as_float_ones_do(capsys):
    """--quantize int8 on the CPU: the same completion of the README's example, its confidence within
    a hundredth but not the same to the fourth digit: the weights were rounded (engine.quantization;
    tests/engine/test_quantization.py measures more cases)."""
    results = []
    for quantize in ("none", "int8"):
        assert main(["complete", f"{SAMPLE}:10:24", "--json", "--quantize", quantize]) == 0
        results.append(json.loads(capsys.readouterr().out.strip().splitlines()[-1]))
    float_result, int8_result = results

    assert int8_result["text"] == float_result["text"] and int8_result["valid"]
    assert int8_result["confidence"] == pytest.approx(float_result["confidence"], abs=0.01)
    assert int8_result["confidence"] != float_result["confidence"]


def test_under_min_confidence_nothing_is_printed(capsys):
    assert main(["complete", f"{SAMPLE}:11:37", "--max-steps", "2", "--min-confidence", "1"]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "under --min-confidence 1: not printed" in captured.err


def test_under_min_confidence_the_json_text_is_empty_and_says_so(capsys):
    assert main(["complete", f"{SAMPLE}:11:37", "--json", "--max-steps", "2", "--min-confidence", "1"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["text"] == "" and result["shown"] is False and result["confidence"] < 1


def test_the_human_output_says_how_sure_the_completion_is(capsys):
    assert main(["complete", f"{SAMPLE}:11:37", "--max-steps", "2"]) == 0
    captured = capsys.readouterr()
    assert captured.out.endswith("\n") and captured.out.count("\n") == 1
    assert re.search(r", confidence 0\.\d\d\]$", captured.err.strip())


def test_completion_after_an_auto_paired_bracket_keeps_the_file_valid(tmp_path, capsys):
    source = tmp_path / "paired.py"
    source.write_text("def total(values):\n    return sum()\n")
    assert main(["complete", f"{source}:2:16", "--json", "--max-steps", "8"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["valid"] is True
    assert not result["text"].rstrip().endswith(")")


def test_a_line_past_the_end_counts_the_lines_an_editor_numbers(tmp_path):
    source = tmp_path / "sixteen.py"
    source.write_text("x = 1\n" * 16)
    assert Location(source, 17, 1).split(source.read_text()) == ("x = 1\n" * 16, "")  # after the last newline
    with pytest.raises(LocationError, match="has 16 lines; line 18 is out of range"):
        Location(source, 18, 1).split(source.read_text())


def test_one_step_is_said_in_the_singular(capsys):
    assert main(["complete", f"{SAMPLE}:11:37", "--max-steps", "1"]) == 0
    assert capsys.readouterr().err.startswith("[1 step, ")


def test_a_line_past_the_end_is_a_clear_error(capsys):
    assert main(["complete", f"{SAMPLE}:999:1", "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "line 999 is out of range" in captured.err


def test_a_missing_model_names_the_path_it_tried(tmp_path, capsys):
    missing = tmp_path / "no-model"
    assert main(["complete", f"{SAMPLE}:11:37", "--model", str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["file.py", "file.py:1", "file.py:a:b"])
def test_location_must_be_path_line_column(spec):
    with pytest.raises(LocationError):
        Location.parse(spec)


def test_location_columns_count_characters_not_bytes(tmp_path):
    text = "s = '😀é'\nx = 1\n"
    prefix, suffix = Location(tmp_path / "f.py", 1, 8).split(text)
    assert prefix == "s = '😀é" and suffix == "'\nx = 1\n"


@pytest.fixture
def torch_threads():
    import torch

    before = torch.get_num_threads()
    yield torch.get_num_threads
    torch.set_num_threads(before)


def test_complete_runs_on_half_the_cores_by_default_as_the_server(torch_threads, capsys):
    """torch's default (every core) made a completion under load 20x slower than one thread."""
    assert main(["complete", f"{SAMPLE}:11:37", "--json", "--max-steps", "2"]) == 0
    assert torch_threads() == max(1, (os.cpu_count() or 2) // 2)


def test_threads_option_sets_the_torch_threads(torch_threads, capsys):
    assert main(["complete", f"{SAMPLE}:11:37", "--json", "--max-steps", "2", "--threads", "1"]) == 0
    assert torch_threads() == 1


def test_a_big_file_is_completed_on_the_window_the_server_would_use(tmp_path):
    """No split of the file into lines, no copy of it: the engine sees what the server would give it."""
    text = "x = 1\n" * 100_000 + "y = [" + "1, " * 100_000 + "\n" + "z = 2\n" * 100_000
    line, column = 100_001, len("y = [") + 3 * 50_000 + 1  # the middle of the long line
    prefix, suffix = Location(tmp_path / "big.py", line, column).split(text)
    offset = 6 * 100_000 + column - 1
    where = placement(text, offset)
    assert (prefix, suffix) == (where.prefix, where.suffix) and prefix.endswith("1, 1, ") and suffix.startswith("1, ")
    assert len(prefix) <= MAX_LINE and len(suffix) <= MAX_LINE


# The autoregressive baseline (a directory with fim.json) is a --model as it is for `serve`.


def test_the_autoregressive_baseline_completes_as_the_server_serves_it(capsys):
    from diffusion_infill.bench.compare import BASELINE_MODEL

    baseline_threshold = json.loads((BASELINE_MODEL / "confidence.json").read_text())["threshold"]

    assert main(["complete", f"{SAMPLE}:10:24", "--json", "--model", str(BASELINE_MODEL)]) == 0

    result = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert set(result) == JSON_KEYS and result["steps"] >= 1
    assert result["threshold"] == baseline_threshold != CALIBRATED_THRESHOLD  # its own gate, not the embedded one's
