#!/usr/bin/env bash
# The throughput table of DiffusionGemma-26B-A4B's shape on one CUDA GPU, in bfloat16 and int4, each
# beside the same-shape causal decoder, with the memory of each (python -m diffusion_infill.bench.throughput,
# docs/performance.md). Random weights: nothing to download. Runs from the repository root on the GPU
# machine; the tables and JSON lines come back in $OUT, one file per mode.
#   bash scripts/gpu_throughput.sh
# Beside the checkout the GPU machine needs what its own Python lacks (the shared GPU notes: it has torch
# but an older transformers), as wheels in .whl/, fetched here once:
#   pip download --no-deps -d .whl transformers==5.25.0 huggingface-hub==2.4.0 torchao==0.18.0 \
#     httpx2==2.16.2 httpcore2==2.16.2 hf-xet==1.8.0 click==8.5.1 truststore==0.10.5 idna==3.20 anyio==4.16.0
# Tested on a CPU with the small shape (tests/bench/test_throughput.py runs the same script):
#   OUT=$(mktemp -d) DEVICE=cpu SHAPE=small MODES="none int8" STEPS=2 CANVAS=32 bash scripts/gpu_throughput.sh
set -euo pipefail
OUT=${OUT:?the folder whose files come back}
SHAPE=${SHAPE:-full}
DEVICE=${DEVICE:-cuda}
MODES=${MODES:-none int4}
STEPS=${STEPS:-16}     # denoising passes per canvas: vLLM's fixed-step benchmark uses 16
CANVAS=${CANVAS:-256}  # as the checkpoint's canvas_length
CANVASES=${CANVASES:-2}
LIMIT=${LIMIT:-270}    # seconds per mode: both modes and the start-up fit one 10-minute command
PYTHON=${PYTHON:-python3}
W=$(mktemp -d)
if compgen -G ".whl/*.whl" >/dev/null; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$W/site" .whl/*.whl
  export PYTHONPATH="$W/site"
fi
# USE_HUB_KERNELS=NO: transformers >= 5.25 would fetch kernel code from the hub on CUDA; HF_HUB_OFFLINE:
# nothing is downloaded.
export PYTHONPATH="$PWD/src:${PYTHONPATH:-}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 USE_HUB_KERNELS=NO
# torchao is needed by int4 and int8 only: without it the bfloat16 table is still made
"$PYTHON" - <<'PY' 2>&1 | tail -1
import importlib.util, torch, transformers
ao = importlib.util.find_spec("torchao") and __import__("torchao").__version__
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA"
print("torch", torch.__version__, "transformers", transformers.__version__, "torchao", ao or "missing", gpu)
PY
status=0
for mode in $MODES; do
  result="$OUT/throughput-$SHAPE-$mode.md"
  if timeout "$LIMIT" "$PYTHON" -m diffusion_infill.bench.throughput --shape "$SHAPE" --device "$DEVICE" \
    --quantize "$mode" --steps "$STEPS" --canvas "$CANVAS" --canvases "$CANVASES" >"$result" 2>"$W/$mode.err"; then
    cat "$result"
  else
    status=1
    echo "throughput, quantize $mode: failed or past ${LIMIT}s; its last lines:"
    tail -5 "$W/$mode.err" | tee "$OUT/throughput-$SHAPE-$mode.err"
  fi
done
exit $status
