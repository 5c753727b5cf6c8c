"""diffusion_infill.bench.typing_burst end to end on the real server: a short burst, the JSON object it prints,
and the accounting that must hold whatever the machine's speed (no timing is asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diffusion_infill.bench import typing_burst

KEYSTROKES = 4


@pytest.mark.slow  # a benchmark run through the real server
def test_a_short_burst_accounts_for_every_request(model_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Few steps per run keep the test short; the burst still outpaces the engine at 40 ms a key.
    typing_burst.main(["--cases", "1", "--keystrokes", str(KEYSTROKES), "--max-steps", "4", "--model", str(model_dir)])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])

    assert (result["keystrokes"], result["interval_ms"], result["cases"]) == (KEYSTROKES, 40, 1)
    burst, single = result["burst"], result["single"]
    assert burst["requests"] == KEYSTROKES and single["requests"] == 1
    assert sum(burst[outcome] for outcome in typing_burst.OUTCOMES) == KEYSTROKES  # each answered exactly once
    assert burst["errors"] == 0 and burst["error_messages"] == [] and single["errors"] == 0
    assert burst["superseded"] <= KEYSTROKES - 1  # nothing comes after the last keystroke to supersede it
    assert burst["steps_mean"] > 0 and single["steps_mean"] > 0  # the engine's own count reached the bench
    assert burst["cpu_s_mean"] > 0 and single["cpu_s_mean"] > 0
    assert burst["last_latency_ms_p50"] > 0 and single["latency_ms_p50"] > 0
    # Wasted work is a difference, not a bound: superseded runs stop early and it may be negative.
    assert result["wasted_steps_mean"] == burst["steps_mean"] - single["steps_mean"]
    assert [case["burst_steps"] for case in result["per_case"]] == [burst["steps_mean"]]
    # the headline ratios are the burst's work over the single request's
    assert result["steps_ratio"] == round(burst["steps_mean"] / single["steps_mean"], 2)
    assert result["cpu_ratio"] == pytest.approx(burst["cpu_s_mean"] / single["cpu_s_mean"], rel=0.05, abs=0.01)
