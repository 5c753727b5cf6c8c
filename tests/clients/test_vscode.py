"""clients/vscode: its Node tests (unit tests of the extension's own logic, and the protocol
test over vscode-jsonrpc) run against the real server with the embedded model.

Needs the compiled extension: `npm ci && npm run compile` in clients/vscode (.ci/run does it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from commands import serve_command

VSCODE = Path(__file__).resolve().parents[2] / "clients" / "vscode"
NODE_TIMEOUT = 600


def test_extension_node_tests_pass_against_the_real_server(model_dir, tmp_path):
    node = shutil.which("node")
    if node is None or not (VSCODE / "out" / "test").is_dir() or not (VSCODE / "node_modules").is_dir():
        pytest.skip("clients/vscode is not built: npm ci && npm run compile")
    telemetry = tmp_path / "t.json"
    server = serve_command(model_dir, telemetry)
    env = {
        **os.environ,
        "DIFFUSION_INFILL_SERVER": json.dumps(server),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(VSCODE.parents[1]), os.environ.get("PYTHONPATH")])),
    }
    run = subprocess.run(
        [node, "--test", "--test-reporter=tap", "out/test/"],
        cwd=VSCODE,
        env=env,
        capture_output=True,
        text=True,
        timeout=NODE_TIMEOUT,
    )
    report = run.stdout + run.stderr
    assert run.returncode == 0, report
    assert "# fail 0" in report and "# skipped 0" in report, report
