"""`python -m diffusion_infill.bench.training_curves`: the losses of training runs against CPU hours and steps."""

from __future__ import annotations

import json

import pytest

from diffusion_infill.bench import training_curves


def write_run(directory, rows):
    directory.mkdir()
    (directory / "log.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return directory


def joint_rows(seconds_per_step):
    return [
        {
            "step": step,
            "loss": 10.0 - step / 50,
            "diffusion": 6.0 - step / 100,
            "ar": 4.0 - step / 100,
            "lr": 0.002,
            "cpu_hours": step * seconds_per_step / 3600,
            "time": 0.0,
        }
        for step in (25, 50, 75, 100)
    ]


def test_each_run_is_summarised_by_its_step_cost_and_its_last_losses(tmp_path, capsys):
    fast = write_run(tmp_path / "bf16", joint_rows(1.4))
    slow = write_run(tmp_path / "fp32", joint_rows(1.8))
    training_curves.main([str(slow), str(fast), "--smooth", "2", "--out", str(tmp_path / "curves.png")])
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert report["bf16"]["cpu_s_per_step"] == 1.4 and report["fp32"]["cpu_s_per_step"] == 1.8
    assert report["bf16"]["diffusion"] == pytest.approx((5.25 + 5.0) / 2)
    assert (tmp_path / "curves.png").read_bytes().startswith(b"\x89PNG")


def test_the_baselines_single_loss_is_plotted_like_the_others(tmp_path, capsys):
    rows = [{"step": 25, "loss": 3.0, "fim": 3.0, "lr": 0.002, "cpu_hours": 0.01, "time": 0.0}]
    training_curves.main([str(write_run(tmp_path / "fim", rows)), "--out", str(tmp_path / "fim.png")])
    assert json.loads(capsys.readouterr().out)["fim"]["fim"] == 3.0


def test_a_directory_without_a_log_is_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        training_curves.main([str(tmp_path)])
    assert exit_.value.code == 2
    assert capsys.readouterr().err == f"training_curves: no log.jsonl in {tmp_path}\n"
