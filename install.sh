#!/usr/bin/env bash
# The one set-up command: a virtualenv in .venv with the project and its test tools.
# Offline-safe: nothing is fetched from a model hub; the embedded model ships in src/diffusion_infill/engine/model.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON=${PYTHON:-python3}
[ -d .venv ] || "$PYTHON" -m venv .venv
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
# torch first, so that installing the project does not pick a build for us: with no GPU,
# the CPU build 2.13.0 (pip finds it in a local wheel directory when one is configured;
# set TORCH_INDEX to a CPU-only index elsewhere); with a GPU, the default CUDA build.
if ! python -c "import torch" 2>/dev/null; then
  if command -v nvidia-smi >/dev/null 2>&1; then
    pip install --quiet torch
  else
    pip install --quiet "torch==2.13.0" ${TORCH_INDEX:+--index-url "$TORCH_INDEX"}
  fi
fi
pip install --quiet -e '.[dev]'
# The Node packages two benchmark tests judge against (markdownlint, jsonrepair: about 12 MB from
# their lock files); without npm those tests skip and say what to run.
if command -v npm >/dev/null 2>&1; then
  for peer in src/diffusion_infill/bench/markdownlint src/diffusion_infill/bench/jsonrepair; do
    (cd "$peer" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  done
else
  echo "no npm: the markdownlint and jsonrepair tests will skip (Node 20+, then npm ci in src/diffusion_infill/bench/markdownlint and src/diffusion_infill/bench/jsonrepair)"
fi
echo "ready: . .venv/bin/activate && diffusion-infill --help"
