#!/usr/bin/env bash
# A GPU session's one prepared check (docs/training-log.md, runs 41-44): on a bare CUDA machine with PyTorch,
# install the wheels carried in .whl/ (structgen's own among them), check the CUDA paths (the models' CUDA
# test, the sampler on the device), train benchmarks/train_grid.py's recipes (RECIPES; the gpu preset by
# default) and score them on the CPU cores. The models' weights go to $OUT (or ./device-out) as soon as
# training ends, in parts of 15 MB; figures and logs follow, also when the scoring runs out of time.
#
#   bash benchmarks/device_grid.sh                      # on the GPU machine (device tool: carry .whl)
#   NO_WHEELS=1 DEVICE=cpu GRID_ARGS="--tiny --minutes 0.3 -n 2" bash benchmarks/device_grid.sh   # a dry run
#
# .whl/: `bash benchmarks/device_wheels.sh` puts there structgen's own wheel and the packages that machine
# lacks, for its Python (3.12).
set -u
OUT=${OUT:-$PWD/device-out}
DEVICE=${DEVICE:-cuda}
RECIPES=${RECIPES:-gpu}  # names from train_grid.RECIPES without spaces, e.g. "gpu notes"
GRID_ARGS=${GRID_ARGS:---minutes 5.5 -n 50 --deadline 420 --modes constrained,grounded,unconstrained,one-token}
GRID_TIMEOUT=${GRID_TIMEOUT:-540}  # seconds: the device tool stops a command at 600, and packing comes after
WORK=$(mktemp -d)
REPO=$PWD
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 COLUMNS=200
PY=${PY:-python3}

if [ -z "${NO_WHEELS:-}" ] && [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$WORK/site" .whl/*.whl \
    || { echo "wheel install failed"; exit 1; }
  export PYTHONPATH="$WORK/site"  # the wheel carries the example files the training data reads (structgen/examples)
fi
$PY -c "import torch, structgen, transformers; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(),
torch.cuda.get_device_name(0) if torch.cuda.is_available() else '-', 'transformers', transformers.__version__)"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv

LOGS="$WORK/logs"; mkdir -p "$LOGS"
if [ "$DEVICE" = cuda ]; then  # the CUDA paths nothing else here can run, beside the grid
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 15 > "$LOGS/nvidia-smi.csv" 2>&1 &
  ( (cd "$WORK" && timeout 180 $PY -m pytest -q -p no:cacheprovider -n 0 "$REPO/tests/test_models.py" -k cuda) \
      > "$LOGS/pytest-cuda.log" 2>&1
    timeout 240 $PY benchmarks/sampler_on_device.py --device cuda > "$LOGS/sampler-cuda.log" 2>&1 ) &
fi

pack_models() {  # each trained model once, as soon as it is saved
  for dir in "$WORK"/grid/*/; do
    name=$(basename "$dir")
    [ -f "$dir/model.safetensors" ] && [ ! -e "$OUT/$name.tgz.part00" ] || continue
    tar czf - -C "$WORK/grid" "$name" | split -b 15m -d - "$OUT/$name.tgz.part"
  done
}
( while sleep 5; do  # packs the first trained model while the rest train and score
    ls "$WORK"/grid/*.train.json >/dev/null 2>&1 && pack_models && break
    [ -e "$WORK/grid.done" ] && break
  done ) &
PACKER=$!
# shellcheck disable=SC2086
timeout "$GRID_TIMEOUT" $PY benchmarks/train_grid.py --device "$DEVICE" --recipes $RECIPES --jobs 15 \
  --out "$WORK/grid" $GRID_ARGS 2>&1 | tee "$LOGS/grid.log"
touch "$WORK/grid.done"
wait "$PACKER"  # never cut a pack short: a half-written part00 would look packed to the next call
pack_models
jobs -p | xargs -r kill 2>/dev/null
tar czf "$OUT/results.tgz" -C "$WORK" logs $(cd "$WORK" && ls -d grid/*.json grid/*.log 2>/dev/null)
ls -l "$OUT"
