"""The README's editor steps, run as written: the VS Code build makes the file its next command
installs, without a prompt; the Neovim step links the plugin where the Neovim install.sh provides
finds it; an older Neovim gets one line, no traceback."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from nvim_driver import PLUGIN

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
OLD_NVIM_VARIABLE = "DIFFUSION_INFILL_TEST_OLD_NVIM"  # a Neovim older than 0.10 (else PATH's, when it is one)


def _vscode_steps() -> list[str]:
    """The README's VS Code command, split at its `&&`."""
    [command] = re.findall(r"\*\*VS Code\*\*: `(cd clients/vscode &&[^`]+)`", README)
    return [" ".join(step.split()) for step in command.split("&&")]


def test_the_vscode_build_makes_the_file_the_next_command_installs(tmp_path):
    """In a copy of clients/vscode (as a fresh clone has it), every step but the install runs
    with no terminal to answer a prompt."""
    if shutil.which("npm") is None:
        pytest.skip("no npm")
    steps = _vscode_steps()
    install = steps.pop()
    assert steps[0] == "cd clients/vscode" and install.startswith("code --install-extension ")
    shutil.copytree(
        ROOT / "clients" / "vscode",
        tmp_path / "clients" / "vscode",
        ignore=shutil.ignore_patterns("node_modules", "out", "*.vsix", "e2e"),
    )
    done = subprocess.run(
        " && ".join(steps),
        shell=True,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "clients" / "vscode" / install.split()[-1]).is_file()


def _nvim_block() -> str:
    [block] = re.findall(r"```sh\n(mkdir -p ~/.local/share/nvim[^`]+)```", README)
    return block


def test_the_neovim_step_links_the_plugin_for_the_neovim_install_sh_provides(tmp_path):
    nvim = Path(sys.executable).parent / "nvim"
    if not nvim.exists():
        pytest.skip("no .venv/bin/nvim (install.sh installs it)")
    block = _nvim_block()
    link, start = block.split("\n.venv/bin/nvim ", 1)
    assert 'ln -sfn "$PWD/clients/nvim"' in link
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / ".local" / "share"),
    }
    subprocess.run(link, shell=True, cwd=ROOT, env=env, check=True, timeout=60)
    # the README's start command without its file and server: the plugin must be found through the link
    probe = [
        str(nvim),
        "--headless",
        "-c",
        "lua io.stdout:write(vim.inspect(type(require('diffusion_infill').setup)))",
        "-c",
        "qa!",
    ]
    done = subprocess.run(probe, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == '"function"', done.stdout + done.stderr
    assert "'$PWD/.venv/bin/diffusion-infill', 'serve'" in start


def _old_nvim() -> str | None:
    candidate = os.environ.get(OLD_NVIM_VARIABLE) or shutil.which("nvim")
    if candidate is None:
        return None
    version = subprocess.run([candidate, "--version"], capture_output=True, text=True, timeout=30).stdout
    match = re.match(r"NVIM v0\.(\d+)\.", version)
    return candidate if match and int(match[1]) < 10 else None


def test_an_older_neovim_gets_one_line_and_no_traceback(tmp_path):
    nvim = _old_nvim()
    if nvim is None:
        pytest.skip(f"no Neovim older than 0.10 (set {OLD_NVIM_VARIABLE}; Debian's package is 0.7)")
    setup = "lua require('diffusion_infill').setup({ cmd = { 'diffusion-infill', 'serve' } })"
    command = [
        nvim,
        "--headless",
        "-u",
        "NONE",
        "--cmd",
        f"set rtp+={PLUGIN}",
        "-c",
        setup,
        "-c",
        "lua require('diffusion_infill').trigger()",
        "-c",
        "qa!",
    ]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    said = (done.stdout + done.stderr).strip()
    assert re.fullmatch(
        r"diffusion-infill needs Neovim 0\.10\+ \(this is 0\.\d+\.\d+\); .venv/bin/nvim is 0\.12", said
    ), said
    assert len(said) < 80  # one screen line: no "Press ENTER" prompt
