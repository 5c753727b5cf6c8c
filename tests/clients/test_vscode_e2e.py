"""clients/vscode in a real VS Code: the packaged .vsix installed into code-server, which runs
the real server with the embedded model, in headless Chromium driven by Playwright
(clients/vscode/e2e/run.js): type in a Python file, see the inline suggestion, accept it with
Tab; select a broken JSON file and run "Fix JSON selection" from the quick fix menu.

Needs `clients/vscode/e2e/install.sh` (code-server, playwright-core, Debian's chromium and
ripgrep) and the packaged extension (`npm run package` in clients/vscode); .ci/run does both."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_nvim import CODE, CURSORS
from test_nvim_terminal import REST, TYPING

VSCODE = Path(__file__).resolve().parents[2] / "clients" / "vscode"
E2E = VSCODE / "e2e"
CODE_SERVER = E2E / "node_modules" / "code-server" / "out" / "node" / "entry.js"
VSIX = VSCODE / "diffusion-infill.vsix"
IMAGE = VSCODE.parents[1] / "docs" / "img" / "vscode.png"
BROKEN = '{"name": "shapes", "sides": 4,, "closed": true\n'
RUN_TIMEOUT = 900
SETTINGS = {
    "workbench.startupEditor": "none",
    "security.workspace.trust.enabled": False,
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "workbench.tips.enabled": False,
    "files.autoSave": "off",  # run.js saves, and waits for the dirty mark to go
    "editor.autoClosingBrackets": "never",  # the test retypes a character before each cursor, "(" among them
}
MODEL_ALWAYS = {
    "diffusionInfill.documentDrafts": False,  # every request runs the model, after any character
    "diffusionInfill.quietAfter": "",
    "diffusionInfill.minConfidence": 0,  # and offers its completion, however unsure (the gate: test_lsp_confidence)
}


@pytest.fixture(scope="module")
def code_server(model_dir, tmp_path_factory):
    with started(model_dir, tmp_path_factory.mktemp("vscode"), {**SETTINGS, **MODEL_ALWAYS}) as server:
        yield server


@pytest.fixture(scope="module")
def code_server_defaults(model_dir, tmp_path_factory):
    """As code_server, with the extension's default settings."""
    with started(model_dir, tmp_path_factory.mktemp("vscode"), SETTINGS) as server:
        yield server


@contextlib.contextmanager
def started(model_dir: Path, root: Path, settings: dict):
    """code-server with the .vsix installed, `settings` and the server command set; yields (url, folders)."""
    node = shutil.which("node")
    if node is None or not CODE_SERVER.exists() or not shutil.which("chromium"):
        pytest.skip("needs clients/vscode/e2e/install.sh (code-server, playwright-core, chromium)")
    if not VSIX.exists():
        pytest.skip("clients/vscode is not packaged: npm ci && npm run package")
    workspace, data, extensions = root / "workspace", root / "data", root / "extensions"
    (data / "User").mkdir(parents=True)
    workspace.mkdir()
    server = [sys.executable, "-m", "cli.main", "serve", "--model", str(model_dir), "--telemetry", str(root / "t.json")]
    (data / "User" / "settings.json").write_text(json.dumps({**settings, "diffusionInfill.server.command": server}))
    env = {**os.environ, "XDG_CONFIG_HOME": str(root / "config"), "XDG_DATA_HOME": str(root / "share")}
    base = [node, str(CODE_SERVER), "--extensions-dir", str(extensions), "--user-data-dir", str(data)]
    subprocess.run([*base, "--install-extension", str(VSIX)], env=env, check=True, capture_output=True, timeout=300)
    log = root / "code-server.log"
    with log.open("w") as output:
        process = subprocess.Popen([*base, "--auth", "none", "--bind-addr", "127.0.0.1:0", "--disable-telemetry",
                                    "--disable-update-check", "--disable-workspace-trust", str(workspace)],
                                   env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (listening := re.search(r"HTTP server listening on (http://\S+)", log.read_text())):
            assert process.poll() is None and time.monotonic() < deadline, "code-server did not listen:\n" + \
                log.read_text()
            time.sleep(0.2)
        url = listening.group(1)
        yield f"{url.rstrip('/')}/?folder={workspace}", root, workspace
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # code-server and the processes it started
        process.wait(timeout=30)


def test_a_suggestion_is_accepted_with_tab_and_fix_json_repairs_a_file(code_server):
    url, root, workspace = code_server
    (workspace / "sample.py").write_text(CODE)
    (workspace / "broken.json").write_text(BROKEN)
    IMAGE.parent.mkdir(parents=True, exist_ok=True)
    config = {"url": url, "python": {"file": "sample.py", "path": str(workspace / "sample.py"), "cursors": CURSORS},
              "json": {"file": "broken.json"}, "screenshot": str(IMAGE), "failureScreenshot": str(root / "failure.png")}
    (root / "run.json").write_text(json.dumps(config))
    run = subprocess.run(["node", str(E2E / "run.js"), str(root / "run.json")], cwd=E2E, capture_output=True,
                         text=True, timeout=RUN_TIMEOUT)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert run.returncode == 0 and "error" not in result, f"{run.stdout}{run.stderr}(screen: {root / 'failure.png'})"
    suggestion = result["suggestion"]
    assert suggestion, f"none of {len(CURSORS)} mid-line cursors got an inline suggestion"
    lines = CODE.split("\n")
    row, col, text = suggestion["line"], suggestion["character"], suggestion["text"]
    lines[row] = lines[row][:col] + text + lines[row][col:]
    assert text and (workspace / "sample.py").read_text() == "\n".join(lines)  # Tab inserted what was shown
    counts = json.loads((root / "t.json").read_text())
    assert counts["accepted"] == 1  # the item's command ran: VS Code accepted it as an inline completion
    fixed = json.loads((workspace / "broken.json").read_text())
    assert fixed == {"name": "shapes", "sides": 4, "closed": True}
    log = next((root / "data" / "logs").rglob("diffusion-infill.log")).read_text()
    assert "ignored settings" not in log, log  # the extension sends the server only the server's settings


@pytest.mark.xfail(strict=True, reason="issue 23: with default settings VS Code shows nothing here after 180 s "
                   "(with or without its word suggestions), where Neovim shows the document draft 'nes)'")
def test_with_default_settings_typing_a_line_the_file_has_shows_its_rest(code_server_defaults):
    url, root, workspace = code_server_defaults
    (workspace / "count_lines.py").write_text(CODE + "\n")
    config = {"url": url, "typing": {"file": "count_lines.py", "line": CODE.count("\n"), "text": TYPING},
              "failureScreenshot": str(root / "failure.png"), "screenshot": str(root / "typed.png")}
    (root / "run.json").write_text(json.dumps(config))
    run = subprocess.run(["node", str(E2E / "run.js"), str(root / "run.json")], cwd=E2E, capture_output=True,
                         text=True, timeout=RUN_TIMEOUT)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert run.returncode == 0 and "error" not in result, f"{run.stdout}{run.stderr}(screen: {root / 'failure.png'})"
    assert result["typed"] == REST, f"shown: {result['typed']!r} (screen: {root / 'typed.png'})"
