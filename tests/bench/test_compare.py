"""`diffusion-infill bench`: both models on the same cases in one run, one JSON object on
the last line, a table and a plot for the README."""

from __future__ import annotations

import difflib
import json
import statistics
import subprocess
import sys

import pytest

from diffusion_infill.bench.cases import build_cases
from diffusion_infill.bench.compare import DIFFUSION, baseline_problem, fastest, measure, ratios, table

SLOW = pytest.mark.slow  # these read a `bench --quick` run: both models in fresh processes, a minute or more


@pytest.fixture(scope="module")
def baseline_dir(tiny_fim, tmp_path_factory):
    directory = tmp_path_factory.mktemp("baseline") / "fim_model"
    tiny_fim.model.save_pretrained(directory)
    tiny_fim.tokenizer.save_pretrained(directory)
    tiny_fim.spec.save(directory)
    return directory


@pytest.fixture(scope="module")
def quick_report(console_script, model_dir, baseline_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    result = subprocess.run(
        [
            console_script,
            "bench",
            "--quick",
            "--cases",
            "3",
            "--json",
            "--threads",
            "1",
            "--model",
            str(model_dir),
            "--baseline",
            str(baseline_dir),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1]), out


@SLOW
def test_quick_json_has_both_models_with_the_headline_metrics(quick_report):
    """Each headline number is what the saved per-case rows say it is."""
    report, out = quick_report
    saved = json.loads((out / "bench.json").read_text())
    for family in ("diffusion", "autoregressive"):
        model, rows = report[family], saved[family]["rows"]
        assert model["cases"] == len(rows) == 3
        assert model["closure_valid"] == 1.0 and all(row["valid"] for row in rows)

        def mean(values):
            return pytest.approx(statistics.fmean(values))

        assert model["exact_match"] == mean(row["text"].strip() == row["expected"].strip() for row in rows)
        assert model["edit_similarity_mean"] == mean(
            difflib.SequenceMatcher(None, row["text"].strip(), row["expected"].strip()).ratio() for row in rows
        )
        assert model["forward_passes_mean"] == mean(row["forward_passes"] for row in rows)
        assert model["insertion_chars_mean"] == mean(len(row["text"].strip()) for row in rows)
        assert model["expected_chars_mean"] == mean(len(row["expected"].strip()) for row in rows)
        assert model["empty_rate"] == mean(not row["text"].strip() for row in rows)
        totals = sorted(row["total_ms"] for row in rows)
        assert totals[0] <= model["latency_ms_p50"] <= totals[-1]
        steps = [step for row in rows for step in row["step_ms"]]
        assert model["step_ms_median"] == (pytest.approx(statistics.median(steps)) if steps else None)


@SLOW
def test_per_case_rows_go_to_the_out_file_not_to_stdout(quick_report):
    report, out = quick_report
    assert "rows" not in report["diffusion"]
    saved = json.loads((out / "bench.json").read_text())
    assert len(saved["diffusion"]["rows"]) == 3 and len(saved["autoregressive"]["rows"]) == 3


@SLOW
def test_table_and_plot_are_written_dated_with_the_machine(quick_report):
    report, out = quick_report
    written = (out / "table.md").read_text()
    assert report["date"] in written and f"{report['machine']['cpus']} CPUs" in written
    assert written.count("\n| ") >= 3  # header, separator, two models
    assert (out / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@SLOW
def test_the_forward_passes_count_the_prefill(quick_report):
    """Diffusion: prefix encoding + denoising steps; the baseline: one per generated token."""
    report, out = quick_report
    saved = json.loads((out / "bench.json").read_text())
    assert all(row["forward_passes"] >= 2 for row in saved["diffusion"]["rows"])
    assert all(row["forward_passes"] >= 1 for row in saved["autoregressive"]["rows"])


@SLOW
def test_each_model_says_where_its_passes_went(quick_report):
    """Diffusion: the mean over its rows' pass counts; the baseline, whose every pass writes a token: 0."""
    report, out = quick_report
    rows = json.loads((out / "bench.json").read_text())["diffusion"]["rows"]
    for key, kind in (("passes_without_reveal_mean", "without_reveal"), ("passes_after_final_mean", "after_final")):
        assert report["diffusion"][key] == sum(row["pass_counts"][kind] for row in rows) / len(rows)
        assert report["autoregressive"][key] == 0
    assert all(row["pass_counts"]["passes"] == row["forward_passes"] - 1 for row in rows)


def test_a_missing_baseline_names_the_path_and_how_to_train_it(console_script, tmp_path):
    result = subprocess.run(
        [console_script, "bench", "--quick", "--baseline", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert str(tmp_path / "none") in result.stderr and "train --objective fim" in result.stderr


def test_ratios_are_diffusion_over_autoregressive_and_none_where_the_baseline_is_zero():
    diffusion = {
        "forward_passes_mean": 6.0,
        "step_ms_median": 9.0,
        "latency_ms_p50": 100.0,
        "latency_ms_p95": 200.0,
        "first_draft_ms_p50": 10.0,
        "exact_match": 0.5,
        "edit_similarity_mean": 0.6,
        "closure_valid": 1.0,
    }
    autoregressive = {**diffusion, "forward_passes_mean": 12.0, "step_ms_median": 6.0, "exact_match": 0.0}
    result = ratios(diffusion, autoregressive)
    assert result["forward_passes_mean"] == 0.5 and result["exact_match"] is None
    assert result["step_ms_median"] == 1.5


@SLOW
def test_the_baseline_is_measured_with_prompt_lookup_on_and_off_and_the_ratios_are_against_the_faster(quick_report):
    report, _ = quick_report
    on, off = report["autoregressive_prompt_lookup"]
    faster = on if on["latency_ms_p50"] <= off["latency_ms_p50"] else off

    assert on["label"] == "autoregressive, prompt lookup on every request" and off["label"].endswith("lookup off")
    assert on["cases"] == off["cases"] == report["autoregressive"]["cases"] == 3
    assert report["ratios_against"] == faster["label"]
    assert report["ratios_diffusion_over_autoregressive"] == ratios(report["diffusion"], faster)
    assert f"Ratios diffusion / {faster['label']}:" in table(report)


def test_the_fastest_configuration_is_the_one_with_the_lowest_median_latency():
    rows = [{"label": "a", "latency_ms_p50": 80.0}, {"label": "b", "latency_ms_p50": 59.0}]
    assert fastest(rows)["label"] == "b" and fastest(rows[:1])["label"] == "a"


def test_no_step_ratio_when_no_completion_took_two_steps():
    diffusion = {
        "forward_passes_mean": 2.0,
        "step_ms_median": None,
        "latency_ms_p50": 30.0,
        "latency_ms_p95": 40.0,
        "first_draft_ms_p50": 30.0,
        "exact_match": 0.5,
        "edit_similarity_mean": 0.6,
        "closure_valid": 1.0,
    }
    assert ratios(diffusion, {**diffusion, "step_ms_median": 6.0})["step_ms_median"] is None


@SLOW
def test_the_table_has_one_row_per_configuration(quick_report):
    report, _ = quick_report
    rows = [line for line in table(report).splitlines() if line.startswith("| ") and "---" not in line]
    # header, diffusion, the baseline as it runs and with prompt lookup on every request and off (no ablations)
    assert len(rows) == 1 + 4


@SLOW
def test_the_table_says_when_where_and_how_it_was_measured(quick_report):
    report, _ = quick_report
    text = table(report)
    assert report["date"] in text and f"{report['machine']['cpus']} CPUs" in text and "Method:" in text


@SLOW
def test_other_cases_are_chosen_by_case_seed_and_reported(
    console_script, model_dir, baseline_dir, quick_report, tmp_path
):
    """Checkpoints and decoding settings are chosen on cases other than the reported ones."""
    subprocess.run(
        [
            console_script,
            "bench",
            "--quick",
            "--cases",
            "3",
            "--threads",
            "1",
            "--case-seed",
            "7",
            "--model",
            str(model_dir),
            "--baseline",
            str(baseline_dir),
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    tuning = json.loads((tmp_path / "bench.json").read_text())
    reported = json.loads((quick_report[1] / "bench.json").read_text())

    assert tuning["cases"]["seed"] == 7 and reported["cases"]["seed"] != 7
    names = {row["name"] for row in tuning["diffusion"]["rows"]}
    assert names.isdisjoint(row["name"] for row in reported["diffusion"]["rows"])


def test_each_case_samples_from_its_own_seed(model_dir, baseline_dir):
    """What one case draws never shifts another's sample, so two configurations compare case by case."""

    def texts(cases):
        return [row["text"] for row in measure(DIFFUSION, model_dir, baseline_dir, cases, 1, 0)["rows"]]

    cases = build_cases(4, 777)
    assert texts([cases[3], *cases[1:]])[1:] == texts(cases)[1:]


def test_bench_without_the_installed_baseline_says_where_to_get_it(tmp_path):
    """A non-editable install has no src/diffusion_infill/bench/fim_model (pyproject leaves it out): the command
    says, in one line and with exit 2, where the baseline comes from."""
    missing = tmp_path / "fim_model"
    probe = (
        "import sys; from pathlib import Path; import diffusion_infill.bench.compare as compare; "
        f"compare.BASELINE_MODEL = Path({str(missing)!r}); "
        "from diffusion_infill.cli.main import main; sys.exit(main(['bench', '--quick']))"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    [line] = result.stderr.splitlines()
    assert "not installed with the package" in line and "install.sh" in line and "--baseline" in line


def test_another_missing_baseline_is_told_how_to_train_one(tmp_path):
    problem = baseline_problem(tmp_path)
    assert str(tmp_path) in problem and "train --objective fim" in problem
