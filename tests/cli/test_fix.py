"""`diffusion-infill fix PATH`: the whole file or a range, the JSON contract, --write."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading

import pytest

from diffusion_infill.cli import fix as cli_fix
from diffusion_infill.cli.fix import RangeError, Selection
from diffusion_infill.cli.main import SAMPLE, main
from diffusion_infill.engine.repair.fixes import Fixer

BROKEN = '{\n  name: \'demo\',\n  "tags": ["a", "b",],\n  "private": True\n'


def last_json(output: str) -> dict:
    return json.loads(output.strip().splitlines()[-1])


def test_json_output_is_one_object_on_the_last_line_and_the_file_is_untouched(tmp_path, console_script):
    source = tmp_path / "broken.json"
    source.write_text(BROKEN)
    done = subprocess.run([console_script, "fix", str(source), "--json"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = last_json(done.stdout)
    assert set(result) == {"text", "fixed", "reason"}
    assert result["fixed"] is True and result["reason"] is None
    assert json.loads(result["text"]) == {"name": "demo", "tags": ["a", "b"], "private": True}
    assert source.read_text() == BROKEN


def test_a_range_fixes_only_that_part_and_write_saves_it(tmp_path, capsys):
    text = '# Notes\n\n```json\n{"a": 1,}\n```\n\n| a | b |\n|---|---|\n| 1 |\n'
    source = tmp_path / "notes.md"
    source.write_text(text)
    assert main(["fix", str(source), "--range", "4:1-4:10", "--json", "--write", "--model"]) == 0
    result = last_json(capsys.readouterr().out)
    assert result["text"] == text.replace('{"a": 1,}', '{"a": 1}')  # the table outside the range stays as it was
    assert source.read_text() == result["text"]


def test_markdown_file_is_fixed_whole(tmp_path, capsys):
    source = tmp_path / "table.md"
    source.write_text("| a | b |\n|---|---|\n| 1 |\n")
    assert main(["fix", str(source), "--json", "--no-model"]) == 0
    assert last_json(capsys.readouterr().out)["text"] == "| a | b |\n|---|---|\n| 1 | |\n"


def test_a_jsonc_file_keeps_its_comments_and_trailing_commas(tmp_path, capsys):
    source = tmp_path / "tsconfig.jsonc"
    source.write_text('{\n  // strict\n  "strict": true\n  "lib": ["es2022",],\n}\n')  # a comma missing
    assert main(["fix", str(source), "--json", "--no-model"]) == 0
    assert last_json(capsys.readouterr().out)["text"] == '{\n  // strict\n  "strict": true,\n  "lib": ["es2022",],\n}\n'


def test_an_already_valid_file_is_reported_as_such_and_left_alone(tmp_path, capsys):
    source = tmp_path / "valid.json"
    source.write_text('{"a": 1}\n')
    assert main(["fix", str(source), "--json", "--write", "--no-model"]) == 0
    result = last_json(capsys.readouterr().out)
    assert result == {"text": '{"a": 1}\n', "fixed": False, "reason": "the file is already valid JSON"}
    assert source.read_text() == '{"a": 1}\n'


def test_an_already_valid_file_says_so_in_one_line_without_a_selection(tmp_path, capsys):
    source = tmp_path / "notes.md"
    source.write_text("# Notes\n\n- one\n- two\n")
    assert main(["fix", str(source), "--no-model"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "# Notes\n\n- one\n- two\n"
    assert captured.err == "diffusion-infill: nothing to fix: no Markdown structure problems in the file\n"


def test_an_already_valid_range_speaks_of_the_selection(tmp_path, capsys):
    source = tmp_path / "notes.md"
    source.write_text('```json\n{"a": 1}\n```\n')
    assert main(["fix", str(source), "--range", "2:1-2:9", "--kind", "json", "--no-model"]) == 0
    assert capsys.readouterr().err == "diffusion-infill: nothing to fix: the selection is already valid JSON\n"


def test_no_valid_fix_exits_1_and_changes_nothing(tmp_path, capsys):
    source = tmp_path / "broken.json"
    source.write_text(":,]\n")
    assert main(["fix", str(source), "--json", "--write", "--no-model"]) == 1
    assert last_json(capsys.readouterr().out) == {
        "text": ":,]\n",
        "fixed": False,
        "reason": "the file is not JSON: there is no JSON value in it",
    }
    assert source.read_text() == ":,]\n"


def test_prose_with_brackets_is_not_json_and_left_alone(tmp_path, capsys):
    source = tmp_path / "notes.json"
    source.write_bytes(b"not json at all {{{ ]]]\n")
    assert main(["fix", str(source), "--write", "--no-model"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""  # --write prints what it wrote, and it wrote nothing
    assert captured.err == "diffusion-infill: not fixed: the file is not JSON: there is no JSON value in it\n"
    assert source.read_bytes() == b"not json at all {{{ ]]]\n"


def test_line_endings_and_a_lone_carriage_return_survive_fix_and_write(tmp_path, capsys):
    source = tmp_path / "crlf.json"
    source.write_bytes(b'{\r\n  "s": "a\rb",\r\n  "n": 1,\r\n}\r\n')
    assert main(["fix", str(source), "--json", "--write", "--no-model"]) == 0
    fixed = b'{\r\n  "s": "a\\rb",\r\n  "n": 1\r\n}\r\n'
    assert last_json(capsys.readouterr().out)["text"].encode() == fixed
    assert source.read_bytes() == fixed
    assert json.loads(fixed) == {"s": "a\rb", "n": 1}


@pytest.mark.parametrize(
    "data", [b'{"a": "\xff\xfe"}\n', b"\xef\xbb", '{"a": "é"}'.encode("latin-1"), "# Notes\n".encode("utf-16")]
)
def test_a_file_that_is_not_utf8_is_one_line_on_stderr_and_exit_2(tmp_path, console_script, data):
    source = tmp_path / "data.json"
    source.write_bytes(data)
    done = subprocess.run(
        [console_script, "fix", str(source), "--no-model", "--write"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "not UTF-8" in done.stderr and "Traceback" not in done.stderr
    assert source.read_bytes() == data


def test_an_unknown_kind_of_file_asks_for_kind(tmp_path, capsys):
    source = tmp_path / "notes.txt"
    source.write_text("plain words\n")
    assert main(["fix", str(source), "--no-model"]) == 2
    assert "--kind" in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["1:1", "1:1-x:2", "9:1-9:2", "1:5-1:1"])
def test_bad_ranges_are_errors(spec):
    with pytest.raises(RangeError):
        Selection.parse(spec, "abc\n")


def test_range_columns_are_one_based_and_the_end_exclusive():
    assert Selection.parse("2:2-2:4", "ab\ncdef\n") == Selection(4, 6)


def test_range_lines_end_where_an_editors_do():
    """The file is read with its line endings as written: a lone "\r" ends a line and a "\r\n" is one line
    end, as in the editor and the server (lsp.text.positions), so a range never ends between "\r" and "\n"."""
    assert Selection.parse("2:2-2:4", "ab\rcdef\r") == Selection(4, 6)
    assert Selection.parse("2:2-2:4", "ab\r\ncdef\r\n") == Selection(5, 7)
    with pytest.raises(RangeError, match="column 4 is out of range: line 1 has 2 characters"):
        Selection.parse("1:4-2:1", "ab\r\ncdef\r\n")


def test_the_quick_starts_broken_json_is_fixed_into_json_that_loads_and_says_it_dropped_its_comment(capsys):
    """A .json file is JSON (not JSONC): its fix loads with a strict parser, the comment dropped and counted."""
    sample = str(SAMPLE.parent / "broken.json")
    for kind in ([], ["--kind", "json"]):
        assert main(["fix", sample, "--no-model", *kind]) == 0
        captured = capsys.readouterr()
        assert json.loads(captured.out) == {
            "name": "shapes",
            "sizes": [1, 2, 3],
            "tags": ["circle", "square"],
            "ok": True,
        }
        assert [line for line in captured.out.splitlines() if line != line.rstrip()] == []
        assert captured.err == (
            "diffusion-infill: dropped 1 comment: only // and /* */ comments are kept, and only as JSONC\n"
        )


def test_a_settings_json_keeps_its_comments_and_a_hash_comment_dropped_is_reported(tmp_path, capsys):
    source = tmp_path / "settings.json"
    source.write_text('{\n  // font\n  "editor.fontSize": 14\n  "x": 1, # not JSONC\n}\n')
    assert main(["fix", str(source), "--json", "--no-model"]) == 0
    result = last_json(capsys.readouterr().out)
    assert result["text"] == '{\n  // font\n  "editor.fontSize": 14,\n  "x": 1,\n}\n'
    assert result["dropped_comments"] == 1


def test_a_byte_order_mark_and_crlf_are_written_back_byte_for_byte(tmp_path, capsys):
    source = tmp_path / "bom.json"
    source.write_bytes(b'\xef\xbb\xbf{\r\n  "a": 1\r\n  "b": 2\r\n}\r\n')
    assert main(["fix", str(source), "--write", "--no-model"]) == 0
    assert capsys.readouterr().out == f"diffusion-infill: wrote {source} (28 characters)\n"  # one line, not the file
    assert source.read_bytes() == b'\xef\xbb\xbf{\r\n  "a": 1,\r\n  "b": 2\r\n}\r\n'


@pytest.mark.parametrize("name", ["empty.json", "empty.jsonc", "empty.md", "empty.txt"])
@pytest.mark.parametrize("content", ["", "\n  \n", "\ufeff"])
def test_an_empty_file_gets_one_answer_whatever_its_kind(tmp_path, capsys, name, content):
    source = tmp_path / name
    source.write_text(content, encoding="utf-8")
    assert main(["fix", str(source), "--no-model"]) == 0
    captured = capsys.readouterr()
    assert captured.out == content.removeprefix("\ufeff")  # the text printed is what a parser reads: no BOM
    assert captured.err == "diffusion-infill: nothing to fix: the file is empty\n"


# VS Code opens these as JSON with Comments (engine/repair/jsonfix/dialect.py cites its package.json lists)
JSONC_FILES = [
    "tsconfig.json",
    "tsconfig.build.json",
    "jsconfig.json",
    ".eslintrc.json",
    ".babelrc",
    "devcontainer.json",
    ".vscode/settings.json",
    ".vscode/launch.json",
    ".vscode/tasks.json",
    ".vscode/extensions.json",
    "keybindings.json",
    "app.jsonc",
    "my.code-workspace",
]


@pytest.mark.parametrize("name", JSONC_FILES)
def test_a_file_vscode_opens_as_json_with_comments_keeps_its_comments(tmp_path, capsys, name):
    source = tmp_path / name
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text('{\n  // why\n  "a": 1\n  "b": 2,\n}\n')
    assert main(["fix", str(source), "--json", "--no-model"]) == 0
    result = last_json(capsys.readouterr().out)
    assert result["text"] == '{\n  // why\n  "a": 1,\n  "b": 2,\n}\n' and "dropped_comments" not in result


@pytest.mark.parametrize("name", ["data.json", "package.json", "my-tsconfig.json", "settings.json.json"])
def test_any_other_json_file_is_json_its_comments_dropped_and_counted(tmp_path, capsys, name):
    source = tmp_path / name
    source.write_text('{\n  // why\n  "a": 1 /* one */\n}\n')
    assert main(["fix", str(source), "--json", "--no-model"]) == 0
    result = last_json(capsys.readouterr().out)
    assert json.loads(result["text"]) == {"a": 1} and result["dropped_comments"] == 2


def test_kind_still_decides_when_given(tmp_path, capsys):
    source = tmp_path / "data.json"
    source.write_text('{"a": 1, // kept\n}')
    assert main(["fix", str(source), "--kind", "jsonc", "--json", "--no-model"]) == 0
    assert last_json(capsys.readouterr().out)["reason"] == "the file is already valid JSONC"


def test_a_url_written_without_quotes_is_a_value_and_no_comment_is_counted(tmp_path, capsys):
    source = tmp_path / "links.json"
    source.write_text('{url: https://example.org/a, "next": [http://a.example/p?q=1]}')
    assert main(["fix", str(source), "--json", "--no-model"]) == 0
    result = last_json(capsys.readouterr().out)
    assert json.loads(result["text"]) == {"url": "https://example.org/a", "next": ["http://a.example/p?q=1"]}
    assert "dropped_comments" not in result


def test_a_files_byte_order_mark_is_written_back_but_the_text_printed_loads(tmp_path, capsys):
    source = tmp_path / "bom.json"
    source.write_bytes(b'\xef\xbb\xbf{"a": 1 "b": 2}')
    assert main(["fix", str(source), "--json", "--no-model"]) == 0
    assert json.loads(last_json(capsys.readouterr().out)["text"]) == {"a": 1, "b": 2}
    assert main(["fix", str(source), "--no-model"]) == 0
    assert json.loads(capsys.readouterr().out) == {"a": 1, "b": 2}
    assert main(["fix", str(source), "--write", "--no-model"]) == 0
    assert source.read_bytes() == b'\xef\xbb\xbf{"a": 1, "b": 2}'


class _SaidLine(io.StringIO):
    """stderr that tells when a line was written to it."""

    def __init__(self) -> None:
        super().__init__()
        self.written = threading.Event()

    def write(self, text: str) -> int:
        count = super().write(text)
        self.written.set()
        return count


class _FixerThatWaitsToBeTalkedAbout(Fixer):
    """The real fixer, made as slow as the slow-fix notice: it fixes once that notice was printed."""

    def __init__(self, stderr: _SaidLine):
        super().__init__(None, "no model")
        self.stderr = stderr

    def fix_json(self, text, around=None, jsonc=False):
        assert self.stderr.written.wait(timeout=60)
        return super().fix_json(text, jsonc=jsonc)


def test_a_fix_that_takes_long_says_what_it_does_in_one_line_on_stderr(tmp_path, monkeypatch, capsys):
    source = tmp_path / "big.json"
    source.write_text('[{"a": 1,}]')
    stderr = _SaidLine()
    monkeypatch.setattr(sys, "stderr", stderr)
    monkeypatch.setattr(cli_fix, "SLOW_S", 0.01)
    text = source.read_text()
    fixer = _FixerThatWaitsToBeTalkedAbout(stderr)
    assert cli_fix.run(fixer, source, text, Selection(0, len(text)), "auto", True, False) == 0
    assert stderr.getvalue() == "diffusion-infill: fixing big.json (11 characters, --kind json)...\n"
    assert last_json(capsys.readouterr().out)["text"] == '[{"a": 1}]'


def test_a_quick_fix_says_nothing_on_stderr(tmp_path, capsys):
    source = tmp_path / "small.json"
    source.write_text('[{"a": 1,}]')
    assert main(["fix", str(source), "--no-model"]) == 0
    assert capsys.readouterr().err == ""


# --write replaces the file atomically (diffusion_infill.cli.atomic)

FIXED = {"name": "demo", "tags": ["a", "b"], "private": True}


def test_write_through_a_symlink_replaces_the_file_it_points_to_and_keeps_the_link(tmp_path, capsys):
    target = tmp_path / "real" / "broken.json"
    target.parent.mkdir()
    target.write_text(BROKEN)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert main(["fix", str(link), "--write", "--no-model"]) == 0
    assert link.is_symlink() and link.readlink() == target
    assert json.loads(target.read_text()) == FIXED
    assert sorted(path.name for path in target.parent.iterdir()) == ["broken.json"]  # no temporary file left


def test_write_keeps_the_files_mode(tmp_path, capsys):
    source = tmp_path / "broken.json"
    source.write_text(BROKEN)
    source.chmod(0o640)
    assert main(["fix", str(source), "--write", "--no-model"]) == 0
    assert json.loads(source.read_text()) == FIXED
    assert source.stat().st_mode & 0o7777 == 0o640


def _at_most_bytes(limit: int):
    """In the child: files it writes may not grow past `limit` bytes (a full disk, in effect); the write
    fails with EFBIG instead of the process being killed by SIGXFSZ."""

    def limit_files() -> None:
        import resource
        import signal

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limit_files


def test_a_write_that_cannot_finish_leaves_the_file_as_it_was(tmp_path, console_script):
    """Written in place, the file was truncated first, then written up to the limit: half a file."""
    source = tmp_path / "broken.json"
    original = BROKEN * 200  # the fix is as long again: past the limit
    source.write_text(original)
    done = subprocess.run(
        [console_script, "fix", str(source), "--write", "--no-model"],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=_at_most_bytes(len(original) // 2),
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and f"cannot write {source}: File too large" in done.stderr
    assert source.read_text() == original
    assert [path.name for path in tmp_path.iterdir()] == ["broken.json"]


@pytest.mark.parametrize("name", ["events.jsonl", "events.ndjson"])
def test_a_json_lines_file_stays_one_document_a_line(tmp_path, capsys, name):
    source = tmp_path / name
    source.write_text('{"event": "start"}\n{"event": "stop"}\n')
    assert main(["fix", str(source), "--json", "--no-model"]) == 0
    assert last_json(capsys.readouterr().out)["reason"] == "the file is already valid JSON Lines"
    source.write_text('{"event": "start"}\n{event: "stop"}\n')
    assert main(["fix", str(source), "--write", "--no-model"]) == 0
    assert source.read_text() == '{"event": "start"}\n{"event": "stop"}\n'


def test_regenerate_with_the_baseline_says_it_was_not_trained_on_the_canvas(capsys):
    from diffusion_infill.bench.compare import BASELINE_MODEL

    arguments = ["fix", str(SAMPLE), "--kind", "regenerate", "--range", "10:5-10:24", "--json"]

    assert main([*arguments, "--model", str(BASELINE_MODEL)]) == 1

    result = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert not result["fixed"] and "is the autoregressive baseline" in result["reason"]
