"""diffusion_infill.bench.replay: held-out code typed through the real server, both models, and the accounting
that must hold whatever the models write and however fast the machine is (no timing asserted)."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from diffusion_infill.bench import replay
from diffusion_infill.cli.main import main
from diffusion_infill.engine.requests import SOURCES

KEYS = (
    "requests",
    "shown",
    "accepted",
    "acceptance_rate",
    "chars_saved_per_100",
    "wrong_shown_per_100",
    "latency_ms_p50",
    "latency_ms_p95",
    "cpu_ms_per_100",
    "answered_without_model",
)


def test_the_typist_pauses_at_word_ends_line_ends_and_after_indentation():
    text = "def f(x):\n    return x\n"
    assert [text[at] for at in range(len(text)) if replay.pauses(text, at)] == [" ", "(", ")", "\n", "r", " ", "\n"]
    assert not replay.pauses(text, 0) and not replay.pauses(text, len(text))


def test_a_suggestion_is_taken_whole_or_by_line_or_word_when_that_much_is_right():
    assert replay.accepted_as("(x)", "(x):\n") == ("all", "(x)")
    assert replay.accepted_as("return x\n    y = 1", "return x\n    z") == ("line", "return x\n")
    assert replay.accepted_as(" total(x)", " total += 1") == ("word", " total")
    assert replay.accepted_as("(y)", "(x)") == ("word", "(")  # a run of punctuation is a word
    assert replay.accepted_as("[y]", "(x)") is None
    assert replay.accepted_as("abc", "ab") is None


def test_tuning_excerpts_come_from_other_files_than_the_reported_ones():
    reported, tuning = replay.excerpts(4, 200), replay.excerpts(4, 200, tuning=True)
    assert len(reported) == len(tuning) == 4
    files = {piece.name.rsplit(":", 1)[0] for piece in reported}
    assert files.isdisjoint(piece.name.rsplit(":", 1)[0] for piece in tuning)
    assert all(piece.text and "\r" not in piece.text for piece in reported + tuning)


def test_excerpts_of_the_users_own_files_come_from_the_python_files_at_the_paths(tmp_path: Path):
    package = tmp_path / "package"
    package.mkdir()
    for name in ("shapes.py", "lines.py"):
        (package / name).write_text("".join(f"def {name[:-3]}_{i}(x):\n    return x + {i}\n" for i in range(40)))
    (package / "short.py").write_text("x = 1\n")
    (package / "notes.txt").write_text("def not_python():\n" * 80)

    pieces = replay.excerpts(2, 120, paths=[package])

    assert sorted(piece.name.rsplit(":", 1)[0] for piece in pieces) == [
        str(package / "lines.py"),
        str(package / "shapes.py"),
    ]
    assert all(piece.text in (package / piece.name.rsplit(":", 1)[0]).read_text() for piece in pieces)
    assert replay.excerpts(1, 120, paths=[package / "shapes.py"])[0].name.startswith(str(package / "shapes.py"))


@pytest.mark.parametrize(
    "option",
    [
        ["--files", "0"],
        ["--chars", "5"],
        ["--min-confidence", "1.5"],
        ["--pause-ms", "0"],
        ["--settings", "[1]"],
        ["--settings", "{mode"],
        ["--paths", "no/such/folder"],
        ["--paths", "src/diffusion_infill/cli/samples"],
    ],
)
def test_bad_replay_options_exit_2_with_one_line(option, capsys: pytest.CaptureFixture[str]):
    try:
        status = main(["bench", "--replay", "--quick", *option])
    except SystemExit as exit:  # an option's type is argparse's to check: its one-line error
        status = exit.code
    assert status == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("diffusion-infill") and "\n" not in error


def test_quick_replay_through_the_server_reports_both_models(
    model_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
):
    log = tmp_path / "requests.jsonl"
    assert (
        main(
            [
                "bench",
                "--replay",
                "--quick",
                "--files",
                "1",
                "--chars",
                "120",
                "--json",
                "--pause-ms",
                "2000",
                "--model",
                str(model_dir),
                "--log",
                str(log),
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    # the server's window/logMessage and infill/status are handled, not warned about as unknown
    assert not [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]

    assert list(result) == ["diffusion", "autoregressive", "files", "characters"]
    [piece] = replay.excerpts(1, 120)
    assert result["files"] == [piece.name] and result["characters"] == len(piece.text)
    for family in ("diffusion", "autoregressive"):
        model = result[family]
        assert set(KEYS) <= set(model)
        assert model["errors"] == 0
        assert model["flashed_drafts"] == 0 and model["show_drafts"] is False  # as the editors: only answers show
        assert 0 < model["requests"] <= result["characters"]  # at most one request per position
        assert model["accepted"] + model["accepted_word"] + model["accepted_line"] <= model["shown"]
        assert model["shown"] + model["late"] <= model["requests"]
        assert model["answered_without_model"] <= model["requests"] - model["late"]
        assert 0 < model["answered_without_run"] <= model["requests"] - model["late"] - model["shown"]
        rate = model["acceptance_rate"]
        assert rate == (round(model["accepted"] / model["shown"], 3) if model["shown"] else None)
        wrong = (model["shown"] - model["accepted"]) * 100 / result["characters"]
        assert model["wrong_shown_per_100"] == round(wrong, 2)
        assert model["chars_saved_per_100"] >= model["chars_saved_whole_per_100"] >= 0
        assert model["cpu_ms_per_100"] > 0  # the server did the work, not this process
        logged = [json.loads(line) for line in log.read_text().splitlines()]
        mine = [entry for entry in logged if entry["model"] == family]
        assert len(mine) == model["requests"]
        assert sum(entry["outcome"] == "all" for entry in mine) == model["accepted"]
        assert sum(entry["outcome"] == "late" for entry in mine) == model["late"]
        # every suggestion shown, and every one accepted whole, has one source
        assert list(model["shown_by_source"]) == list(model["accepted_by_source"]) == list(SOURCES)
        assert sum(model["shown_by_source"].values()) == model["shown"]
        assert sum(model["accepted_by_source"].values()) == model["accepted"]
        shown = [entry for entry in mine if entry["shown"]]
        assert all((entry["source"] == "model") == (entry["step"] != 0) for entry in shown), "only a run takes steps"
        for source in SOURCES:
            assert model["shown_by_source"][source] == sum(entry.get("source") == source for entry in mine)
            assert model["accepted_by_source"][source] <= model["shown_by_source"][source]
            assert model["accepted_by_source"][source] == sum(
                entry.get("source") == source and entry["outcome"] == "all" for entry in mine
            )


def test_drafts_painted_as_an_editor_asked_to_does_are_counted_when_the_answer_withdraws_them(model_dir: Path):
    """Text that appears and goes without a key pressed: the count is what `flashed_drafts` is 0 of by default."""
    [piece] = replay.excerpts(1, 120)
    painted = asyncio.run(replay.replay_model(model_dir, [piece], {}, 0, 2000, show_drafts=True))
    assert painted.counts["errors"] == 0 and painted.counts["flashed_drafts"] > 0, painted.counts


class _SilentServer:
    """A client whose server never answers: what the typist sends, and when it gives up."""

    def __init__(self):
        self.cancelled: list[str] = []
        self.protocol = self

    def send_request_async(self, method, params, message_id):
        return asyncio.get_running_loop().create_future()

    def notify(self, method, params):
        self.cancelled.append(params.id)

    def text_document_did_open(self, params): ...
    def text_document_did_change(self, params): ...
    def text_document_did_close(self, params): ...


def test_the_typist_asks_at_once_so_an_answer_has_the_whole_pause(monkeypatch: pytest.MonkeyPatch):
    # The clients ask at the key itself and the server debounces model runs (lsp/completion/policy.py
    # RequestPolicy.debounce_s): the typist gives an answer the whole pause, not the pause less a client debounce.
    budgets: list[float] = []

    async def times_out(awaitable, timeout):
        budgets.append(timeout)
        awaitable.cancel()
        raise asyncio.TimeoutError

    monkeypatch.setattr(replay.asyncio, "wait_for", times_out)
    server, tally = _SilentServer(), replay.Tally()
    typist = replay.Typist(server, {}, tally, {}, pause_ms=250)
    piece = replay.Excerpt("shapes.py:1-2", "import math\n", "def area(r):\n    return r")

    asyncio.run(typist.type_excerpt(piece))

    full = piece.context + piece.text
    asked_at = [at for at in range(len(piece.text)) if replay.pauses(full, len(piece.context) + at)]
    assert budgets == [0.25] * len(asked_at)
    assert tally.counts["requests"] == tally.counts["late"] == len(server.cancelled) == len(asked_at)
