#!/bin/bash
# The held-out check on one H200: runtime_check (original and fixed script, 2 steps each) of holdout/train.py with
# each of the three configs. ZeRO-1 then ZeRO-3 run beside ZeRO-2: each run is its own process, and what is compared
# (torch's peak allocated bytes on cuda:0, the process's peak RSS) is per process. Run from the repository root
# with the wheels of shared/device/make-wheels.sh in .whl/.
set -o pipefail
test -d docs/evidence/memory/holdout || { echo "not this branch's checkout: $(pwd)"; exit 3; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 4
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
H=docs/evidence/memory/holdout
W=${OUT:-/tmp/out}/measured
mkdir -p "$W"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  nproc; free -g
  python3 -c "import torch, transformers, deepspeed; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__, 'deepspeed', deepspeed.__version__)"
} > "$W/gpu.txt" 2>&1
check() {  # name config
  python3 -m runtime_check $H/train.py --steps 2 --timeout 240 -q --json "$W/$1.json" --plot "$W/$1.svg" \
    -- --deepspeed --deepspeed_config $H/configs/$2 > "$W/$1.txt" 2>&1
  echo "$1 rc=$? $(date -u +%T)" >> "$W/rc.txt"
}
date -u +%T > "$W/rc.txt"
{ check z1_bf16 z1_bf16.json; check z3_offload_all z3_offload_all.json; } &
check z2_offload_opt z2_offload_opt.json &
wait
cat "$W/rc.txt"; tail -n 25 "$W"/*.txt
