"""Renders record.sh's frames (tmux capture-pane -e) to one PNG, the screens stacked top to
bottom: python render.py OUT.png FIRST_ROW LAST_ROW (needs Pillow; not a project dependency)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"
SIZE, CELL_W, CELL_H, GAP = 15, 9, 19, 6
DEFAULT_FG, DEFAULT_BG = (188, 188, 188), (28, 28, 28)
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def cells(line: str):
    """(char, fg, bg) for each cell of one captured line."""
    fg, bg, out, pos = DEFAULT_FG, DEFAULT_BG, [], 0
    for match in SGR.finditer(line + "\x1b[m"):
        out += [(ch, fg, bg) for ch in line[pos : match.start()]]
        pos = match.end()
        codes = [int(c) for c in match.group(1).split(";") if c] or [0]
        i = 0
        while i < len(codes):
            if codes[i] == 0:
                fg, bg = DEFAULT_FG, DEFAULT_BG
            elif codes[i] in (38, 48) and codes[i + 1] == 2:
                color = tuple(codes[i + 2 : i + 5])
                fg, bg = (color, bg) if codes[i] == 38 else (fg, color)
                i += 4
            elif codes[i] == 39:
                fg = DEFAULT_FG
            elif codes[i] == 49:
                bg = DEFAULT_BG
            i += 1
    return out


def main(out: str, first: int, last: int) -> None:
    frames = [p.read_text().split("\n")[first - 1 : last] for p in sorted(Path(__file__).parent.glob("frames/*.ans"))]
    width = max(len(cells(line)) for frame in frames for line in frame)
    height = len(frames) * ((last - first + 1) * CELL_H + GAP)
    image = Image.new("RGB", (width * CELL_W, height), (0, 0, 0))
    draw, font = ImageDraw.Draw(image), ImageFont.truetype(FONT, SIZE)
    y = 0
    for frame in frames:
        for line in frame:
            for x, (ch, fg, bg) in enumerate(cells(line)):
                draw.rectangle([x * CELL_W, y, (x + 1) * CELL_W, y + CELL_H], fill=bg)
                draw.text((x * CELL_W, y + 1), ch, fill=fg, font=font)
            y += CELL_H
        y += GAP
    image.save(out)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
