"""What a training run says once steps run: a line at the first step, then one every few seconds,
with the step, loss, tokens a second and, for a bounded run, the time left."""

from __future__ import annotations

from diffusion_infill.engine.training.progress import Bounds, StepReport, duration


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_line_at_the_first_step_then_one_every_few_seconds():
    said, clock = [], Clock()
    report = StepReport(said.append, Bounds(max_steps=100), every_s=5, clock=clock)
    for step in range(1, 11):
        clock.now += 1.0  # a step a second, 500 tokens each
        report.step(step, lambda: 2.5, 500, cpu_seconds=step)
    assert said == [
        "train: step 1/100 · loss 2.5000 · 500 tokens/s · 1m39s left",
        "train: step 6/100 · loss 2.5000 · 500 tokens/s · 1m34s left",
    ]


def test_an_unbounded_run_says_no_time_left_and_reads_the_loss_only_when_it_says_a_line():
    said, clock, read = [], Clock(), []
    report = StepReport(said.append, Bounds(), every_s=5, clock=clock)
    for step in range(1, 4):
        clock.now += 1.0
        report.step(step, lambda at=step: read.append(at) or 1.0, 10, cpu_seconds=step)
    assert said == ["train: step 1 · loss 1.0000 · 10 tokens/s"] and read == [1]


def test_a_cpu_budget_is_spent_at_the_pace_so_far():
    said, clock = [], Clock()
    report = StepReport(said.append, Bounds(cpu_budget=3600.0), cpu_began=1800.0, clock=clock)
    clock.now += 10.0
    report.step(1, lambda: 1.0, 10, cpu_seconds=1805.0)  # 5 CPU seconds in 10 s: 1,795 left take 3,590 s
    assert said[0].endswith("59m50s left")


def test_durations_read_as_a_person_says_them():
    assert [duration(s) for s in (0.4, 45, 185, 7620)] == ["0s", "45s", "3m05s", "2h07m"]
