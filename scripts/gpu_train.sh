#!/usr/bin/env bash
# Training arms side by side on one CUDA GPU, each for the same wall time, with the project's own
# `diffusion-infill train --device cuda` (docs/training.md). Runs from the repository root on the GPU
# machine; what a run needs beside the checkout: wheels in .whl/ when that machine's transformers has
# no DiffusionGemma, and the PyPI token stream as .gpu/python.u16.xz. Each arm's weights
# come back as float16 safetensors in $OUT (at most 16 MiB a file), logs and recipes in $OUT/logs.tgz.
#   MINUTES=7 ARMS="name:objective:corpus:weighting[:context] ..." bash scripts/gpu_train.sh
set -euo pipefail
OUT=${OUT:?the folder whose files come back}
MINUTES=${MINUTES:-7}
W=$(mktemp -d)
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$W/site" .whl/*.whl
  export PYTHONPATH="$W/site"
fi
# USE_HUB_KERNELS=NO: transformers >= 5.25 would fetch kernel code from the hub on CUDA (the code passes
# use_kernels=False too); HF_HUB_OFFLINE: nothing is downloaded.
export PYTHONPATH="$PWD:${PYTHONPATH:-}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 USE_HUB_KERNELS=NO
mkdir -p runs/pypi-corpus
[ -f .gpu/python.u16.xz ] && xz -dc .gpu/python.u16.xz > runs/pypi-corpus/python.u16
python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__, torch.cuda.get_device_name(0) if torch.cuda.is_available() else \"no CUDA\")"
DEVICE=${DEVICE:-cuda}
for arm in ${ARMS:?name:objective:corpus:weighting[:context] ...}; do
  IFS=: read -r name kind corpus weighting context <<<"$arm"
  case $kind in fim) init=src/diffusion_infill/bench/fim_model ;; *) init=src/diffusion_infill/engine/model ;; esac
  python3 -m diffusion_infill.cli.main train --device "$DEVICE" --objective "$kind" --init-from "$init" --corpus "$corpus" \
    --weighting "$weighting" ${context:+--context-tokens $context} --precision bf16 --after-end pad \
    --learning-rate "${LR:-1e-3}" --warmup-steps 300 --workers "${WORKERS:-2}" ${PREFIXES:+--prefixes $PREFIXES} \
    --max-minutes "$MINUTES" --cooldown-minutes "$(python3 -c "print($MINUTES * 0.4)")" \
    --run-dir "$W/$name/run" --export "$W/$name/export" > "$W/$name.log" 2>&1 &
done
wait || true
for arm in $ARMS; do
  name=${arm%%:*}
  tail -3 "$W/$name.log"
  [ -f "$W/$name/export/model.safetensors" ] || continue
  python3 - "$W/$name/export/model.safetensors" "$OUT/$name.safetensors" <<'PY'
import sys, torch
from safetensors.torch import load_file, save_file
save_file({k: v.to(torch.float16) for k, v in load_file(sys.argv[1]).items()}, sys.argv[2], metadata={"format": "pt"})
PY
done
tar -C "$W" -czf "$OUT/logs.tgz" --exclude='*.safetensors' --exclude='checkpoint.pt' --exclude='tokenizer*' .
ls -la "$OUT"
