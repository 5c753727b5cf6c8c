"""The server's pure pieces: item placement, settings, telemetry."""

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from lsprotocol.types import Command, Position

from diffusion_infill.engine.completion.auto_pairs import auto_paired_closers
from diffusion_infill.lsp.completion.items import items, placement
from diffusion_infill.lsp.completion.telemetry import Telemetry, accept_command
from diffusion_infill.lsp.settings import ServerSettings, initialization_section, merge, section_of
from diffusion_infill.lsp.text.positions import UTF16, Lines

COMMAND = Command(title="t", command="c")


def test_auto_paired_closers_are_covered_and_kept_at_the_end():
    text = 'print(f"😀{x|")\nnext'
    cursor = text.index("|")
    text = text.replace("|", "")
    assert auto_paired_closers(text, cursor) == '")'
    where = placement(text, cursor)
    assert (where.prefix, where.suffix, where.trail) == (text[:cursor], text[cursor:], '")')
    [item] = items(["!r}"], where, Lines(text), UTF16, COMMAND)
    assert item.insert_text == '!r}")'
    assert (item.range.start, item.range.end) == (Position(0, 12), Position(0, 14))  # emoji: 2 units


def test_selected_completion_entry_is_extended_and_replaced():
    text = "import os\nos.pa\n"
    cursor = text.index("pa") + 2
    where = placement(text, cursor, (cursor - 2, cursor, "path"))
    assert where.prefix == "import os\nos.path" and where.suffix == "\n"
    [item] = items([".join("], where, Lines(text), UTF16, COMMAND)
    assert item.insert_text == "path.join("
    assert (item.range.start, item.range.end) == (Position(1, 3), Position(1, 5))


def test_items_drop_empty_and_repeated_completions():
    where = placement("x = ", 4)
    result = items(["", "1", "2", "1"], where, Lines("x = "), UTF16, COMMAND)
    assert [item.insert_text for item in result] == ["1", "2"]
    assert all(item.range.start == item.range.end == Position(0, 4) for item in result)


def test_settings_merge_keeps_good_values_and_reports_bad_ones():
    section = section_of(
        {
            "diffusionInfill": {
                "maxSteps": 8,
                "mode": "sideways",
                "entropyBound": -1,
                "enabledLanguages": ["python"],
                "colour": "red",
            }
        }
    )
    settings, problems = merge(ServerSettings(), section)
    assert settings.max_steps == 8 and settings.enabled_languages == ("python",)
    assert settings.mode == "auto" and settings.entropy_bound is None
    assert len(problems) == 3 and any("colour" in p for p in problems) and any("sideways" in p for p in problems)
    assert settings.engine_settings().denoise.max_steps == 8
    assert settings.enabled_for("python") and not settings.enabled_for("markdown")


@pytest.mark.parametrize(
    "payload",
    [
        {"diffusionInfill": []},  # Neovim: an empty Lua table is encoded as a JSON array
        {"diffusionInfill": None},
        {"diffusionInfill": {}},
        [],
        None,
        {},
    ],
)
def test_empty_or_missing_sections_change_nothing_and_say_nothing(payload):
    for section in (section_of(payload), initialization_section(payload)):
        assert merge(ServerSettings(), section) == (ServerSettings(), [])


def test_initialization_options_may_hold_the_keys_directly_and_a_non_object_section_is_reported():
    assert merge(ServerSettings(), initialization_section({"maxSteps": 4}))[0].max_steps == 4
    settings, [problem] = merge(ServerSettings(), section_of({"diffusionInfill": "fast"}))
    assert settings == ServerSettings() and "expected an object" in problem


def test_document_drafts_are_on_by_default_and_take_true_or_false_only():
    assert ServerSettings().document_drafts
    assert not merge(ServerSettings(), {"documentDrafts": False})[0].document_drafts
    settings, [problem] = merge(ServerSettings(), {"documentDrafts": "no"})
    assert settings.document_drafts and "documentDrafts" in problem and "true or false" in problem


def test_quantize_is_none_by_default_takes_a_known_mode_and_loads_the_model_again():
    assert ServerSettings().quantize == "none"
    int8, problems = merge(ServerSettings(), {"quantize": "int8"})
    assert int8.quantize == "int8" and problems == []
    assert int8.model_key() != ServerSettings().model_key()  # a new quantization is a new load
    settings, [problem] = merge(int8, {"quantize": "int2"})
    assert settings.quantize == "int8" and "quantize" in problem and "int8" in problem


def test_telemetry_keeps_counts_only(tmp_path):
    path = tmp_path / "state" / "acceptance.json"
    telemetry = Telemetry(path)
    telemetry.offered("automatic", 1)
    telemetry.offered("invoked", 0)  # nothing offered: not a request that could be accepted
    telemetry.accepted("automatic")
    telemetry.flush()
    saved = json.loads(path.read_text())
    assert (saved["requests"], saved["items"], saved["accepted"]) == (1, 1, 1)
    assert Telemetry(path).counts.accepted == 1  # survives a restart
    assert accept_command("invoked").arguments == ["invoked"]


def test_counting_writes_nothing_on_the_calling_thread(tmp_path, monkeypatch):
    """The server counts on its event loop: the file is written by the telemetry thread."""
    writers, save = [], Telemetry._saved

    def saved(telemetry, counts):
        writers.append(threading.current_thread().name)
        return save(telemetry, counts)

    monkeypatch.setattr(Telemetry, "_saved", saved)
    path = tmp_path / "acceptance.json"
    telemetry = Telemetry(path)
    for _ in range(20):
        telemetry.offered("automatic", 1)
    deadline = time.monotonic() + 30
    while not (path.exists() and json.loads(path.read_text())["requests"] == 20) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert json.loads(path.read_text())["requests"] == 20
    assert writers and set(writers) == {"telemetry"}


def test_two_servers_on_one_telemetry_file_keep_both_counts(tmp_path):
    """Each editor window runs its own server on the same file: a save adds to the file's counts."""
    path = tmp_path / "acceptance.json"
    first, second = Telemetry(path), Telemetry(path)  # both read the file before either wrote
    first.offered("automatic", 2)
    second.offered("invoked", 1)
    first.accepted("automatic")
    first.flush()
    second.accepted("invoked")
    second.flush()  # its last save, by its thread or here, read the file after first's
    saved = json.loads(path.read_text())
    assert (saved["requests"], saved["items"], saved["accepted"]) == (2, 3, 2)
    assert saved["by_trigger"] == {
        "automatic": {"requests": 1, "items": 2, "accepted": 1},
        "invoked": {"requests": 1, "items": 1, "accepted": 1},
    }
    assert second.counts.accepted == 2  # what the file says now, not only its own


def test_servers_writing_at_the_same_time_lose_no_count(tmp_path):
    path, each = tmp_path / "acceptance.json", 150
    script = (
        "import sys; from pathlib import Path; from diffusion_infill.lsp.completion.telemetry import Telemetry; "
        f"t = Telemetry(Path(sys.argv[1])); [t.offered('automatic', 1) for _ in range({each})]; t.flush()"
    )
    writers = [subprocess.Popen([sys.executable, "-c", script, str(path)]) for _ in range(2)]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0]
    saved = json.loads(path.read_text())
    assert (saved["requests"], saved["items"]) == (2 * each, 2 * each)


def test_a_held_telemetry_lock_defers_the_save_and_a_stale_one_is_broken(tmp_path):
    path = tmp_path / "acceptance.json"
    lock = tmp_path / "acceptance.json.lock"
    lock.touch()  # another server is saving
    telemetry = Telemetry(path)
    telemetry.offered("automatic", 1)
    assert not path.exists() and telemetry.counts.requests == 1  # kept for the next save
    old = time.time() - 60
    os.utime(lock, (old, old))  # a server that died holding it
    telemetry.accepted("automatic")
    telemetry.flush()
    saved = json.loads(path.read_text())
    assert (saved["requests"], saved["accepted"]) == (1, 1) and not lock.exists()


def test_the_other_open_documents_of_a_language_are_the_lines_a_completion_may_copy():
    from diffusion_infill.lsp.text.documents import Documents

    documents = Documents()
    here = documents.open("file:///a.py", "python", 1, "x = 1\n")
    documents.open("file:///b.py", "python", 1, "def load(path):\n")
    documents.open("file:///c.md", "markdown", 1, "# notes\n")
    documents.open("file:///d.py", "python", 1, "def save(path):\n")

    assert [d.uri for d in documents.others(here)] == ["file:///b.py", "file:///d.py"]
    assert [d.uri for d in documents.others(here, most=1)] == ["file:///d.py"]


def test_a_document_drafts_setting_switched_off_also_switches_off_judged_lines_and_prompt_lookup():
    assert ServerSettings().engine_settings().line_drafts
    assert not ServerSettings(document_drafts=False).engine_settings().line_drafts
