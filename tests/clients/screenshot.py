"""Pictures of the editors for docs/img, taken by the end-to-end tests: terminal lines with
their SGR colour codes (tmux capture-pane -e) become HTML that headless Chromium renders
(through Playwright: clients/vscode/e2e, installed by its install.sh).

A test takes its picture in its temporary folder; only with $DIFFUSION_INFILL_UPDATE_SCREENSHOTS=1
is it copied over docs/img's, so that a test run leaves the checkout as it was."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

SGR = re.compile(r"\x1b\[([0-9;]*)m")
FOREGROUND, BACKGROUND = "#bcbcbc", "#1c1c1c"
BASIC = [
    "#000000",
    "#cd0000",
    "#00cd00",
    "#cdcd00",
    "#0000ee",
    "#cd00cd",
    "#00cdcd",
    "#e5e5e5",
    "#7f7f7f",
    "#ff0000",
    "#00ff00",
    "#ffff00",
    "#5c5cff",
    "#ff00ff",
    "#00ffff",
    "#ffffff",
]
CELL_WIDTH, CELL_HEIGHT = 9, 19


E2E = Path(__file__).resolve().parents[2] / "clients" / "vscode" / "e2e"
DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img"
UPDATE_VARIABLE = "DIFFUSION_INFILL_UPDATE_SCREENSHOTS"


def publish(picture: Path) -> bool:
    """Copies `picture` (taken in a temporary folder) to docs/img under its name when
    $DIFFUSION_INFILL_UPDATE_SCREENSHOTS is 1; True when it did."""
    if os.environ.get(UPDATE_VARIABLE) != "1":
        return False
    shutil.copyfile(picture, DOCS_IMAGES / picture.name)
    return True


def renderer() -> list[str] | None:
    """The command that renders HTML to PNG, or None when e2e/install.sh has not run."""
    node = shutil.which("node")
    has_browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if node is None or not has_browser or not (E2E / "node_modules" / "playwright-core").is_dir():
        return None
    return [node, str(E2E / "screenshot.js")]


def palette(index: int) -> str:
    """xterm's 256 colours: 16 basic, a 6x6x6 cube, 24 greys."""
    if index < 16:
        return BASIC[index]
    if index < 232:
        cube = [0, 95, 135, 175, 215, 255]
        index -= 16
        return f"#{cube[index // 36]:02x}{cube[index // 6 % 6]:02x}{cube[index % 6]:02x}"
    grey = 8 + (index - 232) * 10
    return f"#{grey:02x}{grey:02x}{grey:02x}"


def _style(codes: list[int], style: dict[str, str]) -> dict[str, str]:
    i = 0
    while i < len(codes):
        code = codes[i]
        if code == 0:
            style = {}
        elif code == 1:
            style["font-weight"] = "bold"
        elif code == 3:
            style["font-style"] = "italic"
        elif code == 7:
            style["reverse"] = "1"
        elif 30 <= code <= 37 or 90 <= code <= 97:
            style["color"] = BASIC[code - 30 if code < 90 else code - 82]
        elif code in (38, 48) and i + 2 < len(codes) and codes[i + 1] == 5:
            style["color" if code == 38 else "background"] = palette(codes[i + 2])
            i += 2
        elif code in (38, 48) and i + 4 < len(codes) and codes[i + 1] == 2:
            style["color" if code == 38 else "background"] = "#{:02x}{:02x}{:02x}".format(*codes[i + 2 : i + 5])
            i += 4
        elif code == 39:
            style.pop("color", None)
        elif code == 49:
            style.pop("background", None)
        i += 1
    return style


def line_html(line: str) -> str:
    """One terminal line as HTML spans."""
    out, style, position = [], {}, 0
    for match in [*SGR.finditer(line), None]:
        end = match.start() if match else len(line)
        if end > position:
            css = dict(style)
            if css.pop("reverse", None):
                css["color"], css["background"] = style.get("background", BACKGROUND), style.get("color", FOREGROUND)
            attributes = ";".join(f"{key}:{value}" for key, value in css.items())
            out.append(f'<span style="{attributes}">{html.escape(line[position:end])}</span>')
        if match:
            style = _style([int(code) for code in match.group(1).split(";") if code] or [0], dict(style))
            position = match.end()
    return "".join(out)


def save_terminal(lines: list[str], target: Path) -> bool:
    """Renders `lines` (SGR-coloured) one under another to the PNG `target`; False without a renderer."""
    command = renderer()
    if command is None:
        return False
    width = max(len(SGR.sub("", line)) for line in lines) * CELL_WIDTH + 24
    height = len(lines) * CELL_HEIGHT + 24
    body = "\n".join(f"<div>{line_html(line) or '&nbsp;'}</div>" for line in lines)
    page = (
        f"<html><body style='margin:12px;background:{BACKGROUND};color:{FOREGROUND};"
        f"font:15px/{CELL_HEIGHT}px DejaVu Sans Mono,monospace;white-space:pre'>{body}</body></html>"
    )
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "screen.html"
        source.write_text(page)
        subprocess.run(
            [*command, str(source), str(target), str(width), str(height)], check=True, capture_output=True, timeout=120
        )
    return True
