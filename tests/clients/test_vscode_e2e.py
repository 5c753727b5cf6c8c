"""clients/vscode in a real VS Code: the packaged .vsix installed into code-server, which runs
the real server with the embedded model, in headless Chromium driven by Playwright
(clients/vscode/e2e/run.js): type in a Python file, see the inline suggestion, accept it with
Tab; select a broken JSON file and run "Fix JSON selection" from the quick fix menu; with the
extension's default settings, type a line the file already has and accept its rest.

Needs `clients/vscode/e2e/install.sh` (code-server, playwright-core, Debian's chromium and
ripgrep) and the packaged extension (`npm run package` in clients/vscode); .ci/run does both."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from code_server import WORKBENCH, missing, run_in_browser, serving
from commands import serve_command
from openai_servers import SilentServer
from screenshot import publish
from test_nvim import CODE, CURSORS
from test_nvim_terminal import TYPING

BROKEN = '{"name": "shapes", "sides": 4,, "closed": true\n'
MODEL_ALWAYS = {
    "editor.autoClosingBrackets": "never",  # the test retypes a character before each cursor, "(" among them
    "diffusionInfill.documentDrafts": False,  # every request runs the model, after any character
    "diffusionInfill.quietAfter": "",
    "diffusionInfill.minConfidence": 0,  # and offers its completion, however unsure (the gate: test_lsp_confidence)
}


def needs_code_server() -> None:
    """A skip saying what is missing, if anything."""
    if why := missing():
        pytest.skip(why)


@pytest.fixture(scope="module")
def code_server(model_dir, tmp_path_factory):
    """code-server with the .vsix installed and the server command set; yields (url, root, workspace)."""
    needs_code_server()
    root = tmp_path_factory.mktemp("vscode")
    with serving(root, serve_command(model_dir, root / "t.json"), {**WORKBENCH, **MODEL_ALWAYS}) as url:
        yield url, root, root / "workspace"


def test_a_suggestion_is_accepted_with_tab_and_fix_json_repairs_a_file(code_server):
    url, root, workspace = code_server
    (workspace / "sample.py").write_text(CODE)
    (workspace / "broken.json").write_text(BROKEN)
    picture = root / "vscode.png"
    result = run_in_browser(
        root,
        {
            "url": url,
            "python": {"file": "sample.py", "path": str(workspace / "sample.py"), "cursors": CURSORS},
            "json": {"file": "broken.json"},
            "screenshot": str(picture),
        },
    )
    suggestion = result["suggestion"]
    assert suggestion, f"none of {len(CURSORS)} mid-line cursors got an inline suggestion"
    # Tab inserted what was shown: the cursor's line reads as it was displayed with the suggestion
    # (VS Code may show one insertion as several ghost parts around the text already there)
    lines, accepted = CODE.split("\n"), (workspace / "sample.py").read_text().split("\n")
    row, below = suggestion["line"], lines[suggestion["line"] + 1 :]
    assert suggestion["text"] and accepted[row] == suggestion["shown"], (accepted[row], suggestion)
    assert accepted[:row] == lines[:row] and accepted[len(accepted) - len(below) :] == below
    counts = json.loads((root / "t.json").read_text())
    assert counts["accepted"] == 1  # the item's command ran: VS Code accepted it as an inline completion
    fixed = json.loads((workspace / "broken.json").read_text())
    assert fixed == {"name": "shapes", "sides": 4, "closed": True}
    log = next((root / "data" / "logs").rglob("diffusion-infill.log")).read_text()
    assert "ignored settings" not in log, log  # the extension sends the server only the server's settings
    publish(picture)


def test_an_untrusted_workspace_runs_no_command_of_its_own_and_sends_code_nowhere(model_dir, tmp_path):
    """A cloned repository's .vscode/settings.json names a command that would create a marker file
    and sends code to a local listener; opened untrusted, the real server runs, answers from the
    local model, and nothing reaches the listener."""
    needs_code_server()
    listener = SilentServer()
    marker = tmp_path / "the-workspace-command-ran"
    workspace = tmp_path / "workspace"
    (workspace / ".vscode").mkdir(parents=True)
    (workspace / ".vscode" / "settings.json").write_text(
        json.dumps(
            {
                "diffusionInfill.server.command": ["touch", str(marker)],
                "diffusionInfill.engine": "openai",
                "diffusionInfill.url": listener.url,
                "diffusionInfill.model": "served",
            }
        )
    )
    (workspace / "sample.py").write_text(CODE)
    try:
        command = serve_command(model_dir, tmp_path / "t.json", verbose=True)  # -v: its log says "model ready"
        with serving(tmp_path, command, {**WORKBENCH, **MODEL_ALWAYS}, trusted=False) as url:
            result = run_in_browser(
                tmp_path,
                {"url": url, "python": {"file": "sample.py", "path": str(workspace / "sample.py"), "cursors": CURSORS}},
            )
        assert not marker.exists(), "the workspace's server.command ran"
        assert listener.requests.empty(), "code was sent to the workspace's URL"
        assert result["suggestion"], "the real server did not answer: no inline suggestion"
        log = next((tmp_path / "data" / "logs").rglob("diffusion-infill.log")).read_text()
        assert "model ready" in log and listener.url not in log, log  # the local model, no remote engine
    finally:
        listener.close()


def test_with_default_settings_typing_a_line_the_file_has_shows_its_rest_and_tab_inserts_it(model_dir, tmp_path):
    """The extension's default settings (document drafts, quiet characters and the confidence gate on)
    and VS Code's own, which close `(` as it is typed and open a list of the file's words: typing a
    line whose words the file has a few lines up, a key at a time, shows the rest of that line before
    the `)` VS Code added, with the word list open and once Escape has closed it, and Tab completes
    the line with one `)`. Without the word list the suggestion is the document's draft alone (the
    model's own completion there is under the gate): it is what issue 23 found missing."""
    needs_code_server()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    source, row = workspace / "count_lines.py", CODE.count("\n")  # the empty line after CODE
    source.write_text(CODE + "\n")  # `    total = sum(len(line) for line in lines)` two lines up
    logs = tmp_path / "data" / "logs"
    command = serve_command(model_dir, tmp_path / "t.json", verbose=True)  # -v: "model ready", and each request
    request = f"inlineCompletion {source.as_uri()} {row}:{len(TYPING)} automatic"  # a request at the pause
    with serving(tmp_path, command, WORKBENCH) as url:
        # typed once the model is ready, so that what is shown with the word list open (the model's) is settled
        result = run_in_browser(
            tmp_path,
            {
                "url": url,
                "screenshot": str(tmp_path / "typed.png"),
                "typing": {
                    "file": source.name,
                    "line": row,
                    "text": TYPING,
                    "logs": str(logs),
                    "ready": "model ready",
                    "request": request,
                },
            },
        )
    typed, shown = result["typed"], {"text": "nes", "shown": TYPING + "nes)"}  # shown before VS Code's `)`
    assert typed["first"] == shown, f"{typed} (screen: {tmp_path / 'typed.png'})"
    assert typed["alone"] == shown, typed
    expected = (CODE + "\n").split("\n")
    expected[row] = "    count = sum(1 for line in lines)"  # Tab inserted the rest, and the line closes once
    assert source.read_text().split("\n") == expected, typed
    assert request in next(logs.rglob("diffusion-infill.log")).read_text()  # -v shows each request


def suggestions_off_then_on(
    model_dir, tmp_path, settings: dict, before: list, after: list, suggest_now: bool = False
) -> tuple[dict, str]:
    """run.js's onOff on the empty line after CODE with `settings`: the result, and the log's request prefix."""
    needs_code_server()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    source, row = workspace / "count_lines.py", CODE.count("\n")
    source.write_text(CODE + "\n")
    logs = tmp_path / "data" / "logs"
    command = serve_command(model_dir, tmp_path / "t.json", verbose=True)  # -v: "model ready", and each request
    request = f"inlineCompletion {source.as_uri()} "
    with serving(tmp_path, command, {**WORKBENCH, **settings}) as url:
        result = run_in_browser(
            tmp_path,
            {
                "url": url,
                "onOff": {
                    "file": source.name,
                    "line": row,
                    "text": TYPING,
                    "logs": str(logs),
                    "ready": "model ready",
                    "request": request,
                    "before": before,
                    "after": after,
                    "suggestNow": suggest_now,
                    "info": bool(settings.get("diffusionInfill.infoLine")),
                },
            },
        )
    return result["onOff"], request


ON = {"text": "nes", "shown": TYPING + "nes)"}  # the document's draft, before the `)` VS Code added


def test_the_status_item_reads_ready_and_toggle_stops_ghost_text_while_typing_and_brings_it_back(model_dir, tmp_path):
    toggle = "diffusion-infill: Toggle Inline Suggestions"
    result, _ = suggestions_off_then_on(
        model_dir, tmp_path, {}, before=[[toggle, "infill: off"]], after=[[toggle, "infill: ready"]], suggest_now=True
    )
    assert result["status"] == ["infill: ready", "infill: off", "infill: ready"], result
    assert result["off"] is None and result["requests"] == 0, result  # not shown, not even asked
    assert result["on"] == ON, result
    assert result["invoked"], result  # Suggest Now asked (Invoked)
    assert result["info"] is None, result  # no info line unless asked for


def test_enable_python_false_keeps_python_silent_until_toggled_for_the_language(model_dir, tmp_path):
    """And with diffusionInfill.infoLine, the suggestion's info line at the end of its line."""
    toggle = "diffusion-infill: Toggle Inline Suggestions for This Language"
    settings = {"diffusionInfill.enable": {"python": False}, "diffusionInfill.infoLine": True}
    result, request = suggestions_off_then_on(
        model_dir, tmp_path, settings, before=[], after=[[toggle, "infill: ready"]]
    )
    assert result["status"] == ["infill: off (python)", "infill: ready"], result
    assert result["off"] is None and result["requests"] == 0, result
    assert result["on"] == ON, result
    assert re.fullmatch(r"0 steps · \d+ ms · confidence 0\.\d\d · (document|typed_along)", result["info"]), result
    log = next((tmp_path / "data" / "logs").rglob("diffusion-infill.log")).read_text()
    assert log.count(request) >= 1  # asked once it was on again


def palette(model: Path, tmp_path: Path, error: str | None = None) -> dict:
    """run.js's palette on a broken JSON file, the server loading `model`."""
    needs_code_server()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "broken.json").write_text(BROKEN)
    logs, ready = tmp_path / "data" / "logs", f"ready: {model} (engine local)"  # window/logMessage, in the log
    # serve refuses a model that is not there on its command line: one that cannot load comes from the settings
    command, settings = (
        (serve_command(None, tmp_path / "t.json"), {**WORKBENCH, "diffusionInfill.model": str(model)})
        if error
        else (serve_command(model, tmp_path / "t.json"), WORKBENCH)
    )
    with serving(tmp_path, command, settings) as url:
        config = {"json": "broken.json", "logs": str(logs), "ready": ready, "error": error}
        return run_in_browser(tmp_path, {"url": url, "palette": config})["palette"]


def test_the_status_menu_and_the_commands_fix_show_the_log_and_restart(model_dir, tmp_path):
    result = palette(model_dir, tmp_path)
    assert result["status"] == ["infill: ready", "infill: ready"], result  # before and after Restart Server
    assert result["menu"] == [
        "Turn off everywhere",
        "Turn off for json",
        "Suggest now",
        "Fix selection",
        "Restart the server",
        "Show the log",
    ], result
    assert json.loads((tmp_path / "workspace" / "broken.json").read_text()) == {
        "name": "shapes",
        "sides": 4,
        "closed": True,
    }  # Fix Selection
    assert result["logShown"], result  # Show Log: the server's ready line on screen
    log = next((tmp_path / "data" / "logs").rglob("diffusion-infill.log")).read_text()
    assert log.count(f"loading: {model_dir} (engine local)") == 2  # restarted: a second server loaded it


def test_a_model_that_cannot_load_is_an_error_item_whose_click_opens_the_log(tmp_path):
    result = palette(tmp_path / "no-such-model", tmp_path, error="no such directory")
    assert result == {"status": "infill: error", "logShown": True}
