#!/usr/bin/env bash
# Records ghost text converging in Neovim: tmux runs nvim with demo/init.lua on shapes.py,
# the cursor goes to LINE:COL in insert mode, and every changed screen is kept (ANSI colours)
# in frames/NNN.ans until the final item is shown. Needs tmux, nvim and diffusion-infill on PATH.
#   bash clients/nvim/demo/record.sh [LINE COL]
set -euo pipefail
cd "$(dirname "$0")"
LINE=${1:-15}; COL=${2:-23}
SESSION=diffusion-infill-demo-$$
rm -rf frames && mkdir frames
tmux new-session -d -s "$SESSION" -x 72 -y 18 "nvim -n -u init.lua shapes.py"
trap 'tmux kill-session -t "$SESSION" 2>/dev/null || true' EXIT
sleep "${WARMUP:-12}"  # the model loads in the background
tmux send-keys -t "$SESSION" ":call cursor($LINE, $((COL + 1)))" Enter i
previous=""
for i in $(seq 1 300); do
  screen=$(tmux capture-pane -e -p -t "$SESSION")
  if [ "$screen" != "$previous" ]; then
    printf '%s\n' "$screen" > "frames/$(printf %03d "$i").ans"
    previous=$screen
  fi
  sleep 0.01
done
ls frames | wc -l
