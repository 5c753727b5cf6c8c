"""code-server (VS Code in the browser) with the packaged .vsix installed, and
clients/vscode/e2e/run.js driving it in headless Chromium through Playwright: one way to start it,
for tests/clients/test_vscode_e2e.py and scripts/typing_bench.py.

Needs `clients/vscode/e2e/install.sh` (code-server, playwright-core, Debian's chromium and
ripgrep) and the packaged extension (`npm run package` in clients/vscode)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

VSCODE = Path(__file__).resolve().parents[2] / "clients" / "vscode"
E2E = VSCODE / "e2e"
CODE_SERVER = E2E / "node_modules" / "code-server" / "out" / "node" / "entry.js"
VSIX = VSCODE / "diffusion-infill.vsix"
RUN_TIMEOUT = 900
WORKBENCH = {  # a quiet workbench; the editor and the extension as they come
    "workbench.startupEditor": "none",
    "security.workspace.trust.enabled": False,
    "telemetry.telemetryLevel": "off",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "workbench.tips.enabled": False,
    "files.autoSave": "off",  # run.js saves, and waits for the dirty mark to go
}
# Workspace Trust on, and a folder opened without being trusted: Restricted Mode, no prompt.
UNTRUSTED = {"security.workspace.trust.enabled": True, "security.workspace.trust.startupPrompt": "never"}


def missing() -> str | None:
    """What is missing to run code-server with the extension, or None."""
    if shutil.which("node") is None or not CODE_SERVER.exists() or not shutil.which("chromium"):
        return "needs clients/vscode/e2e/install.sh (code-server, playwright-core, chromium)"
    if not VSIX.exists():
        return "clients/vscode is not packaged: npm ci && npm run package"
    return None


@contextmanager
def serving(root: Path, server: list[str], settings: dict, trusted: bool = True) -> Iterator[str]:
    """code-server on `root`/workspace with the .vsix installed and the user's `settings`; yields the
    URL that opens it. The server command is a machine setting (package.json): code-server reads it
    from the remote machine's settings (Machine/settings.json), not the user's."""
    if why := missing():
        raise RuntimeError(why)
    node = shutil.which("node")
    workspace, data, extensions = root / "workspace", root / "data", root / "extensions"
    (data / "User").mkdir(parents=True)
    (data / "Machine").mkdir(parents=True)
    workspace.mkdir(exist_ok=True)
    trust = {} if trusted else UNTRUSTED
    (data / "User" / "settings.json").write_text(json.dumps({**settings, **trust}))
    (data / "Machine" / "settings.json").write_text(json.dumps({"diffusionInfill.server.command": server}))
    env = {**os.environ, "XDG_CONFIG_HOME": str(root / "config"), "XDG_DATA_HOME": str(root / "share")}
    base = [node, str(CODE_SERVER), "--extensions-dir", str(extensions), "--user-data-dir", str(data)]
    subprocess.run([*base, "--install-extension", str(VSIX)], env=env, check=True, capture_output=True, timeout=300)
    log = root / "code-server.log"
    flags = ["--disable-workspace-trust"] if trusted else []
    with log.open("w") as output:
        process = subprocess.Popen(
            [
                *base,
                "--auth",
                "none",
                "--bind-addr",
                "127.0.0.1:0",
                "--disable-telemetry",
                "--disable-update-check",
                *flags,
                str(workspace),
            ],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 120
        while not (listening := re.search(r"HTTP server listening on (http://\S+)", log.read_text())):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("code-server did not listen:\n" + log.read_text())
            time.sleep(0.2)
        url = listening.group(1)
        yield f"{url.rstrip('/')}/?folder={workspace}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # code-server and the processes it started
        process.wait(timeout=30)


def run_in_browser(root: Path, config: dict) -> dict:
    """clients/vscode/e2e/run.js with `config`: its result, or a RuntimeError with its output."""
    config = {**config, "failureScreenshot": str(root / "failure.png")}
    (root / "run.json").write_text(json.dumps(config))
    run = subprocess.run(
        ["node", str(E2E / "run.js"), str(root / "run.json")],
        cwd=E2E,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    lines = run.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if lines else {"error": "no output"}
    if run.returncode != 0 or "error" in result:
        raise RuntimeError(f"{run.stdout}{run.stderr}(screen: {root / 'failure.png'})")
    return result


def server_log(root: Path) -> str:
    """The extension's output (the server's stderr among it) under code-server's logs in `root`."""
    return next((root / "data" / "logs").rglob("diffusion-infill.log")).read_text()
