#!/bin/bash
# The forecast checked on one H200: runtime_check (original and fixed script, forecast beside the measurement)
# over fixtures/projects/memory/train.py (an 852,559,872-parameter Llama, bf16, torch AdamW, micro batch 2 x 256),
# ZeRO-2, ZeRO-3, ZeRO-3 + offload_optimizer, and ZeRO-2 with the DSL201 load (map_location="cuda") of an fp32
# state dict before initialize. Run from the repository root with the wheels of shared/device/make-wheels.sh:
#   run(command="bash docs/evidence/memory/run_gpu.sh", carry=[".whl"])
set -o pipefail
test -d dslint/memory || { echo "not this branch's checkout: $(pwd) $(git log -1 --oneline 2>&1)"; exit 3; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 4
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
E=docs/evidence/memory
S=fixtures/projects/memory/train.py
W=${OUT:-/tmp/out}/memory
mkdir -p "$W"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import torch, transformers, deepspeed; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__, 'deepspeed', deepspeed.__version__)"
} > "$W/gpu.txt" 2>&1
for c in zero2 zero3 zero3_offload; do
  python3 -m runtime_check $S --steps 2 --timeout 240 -q --json "$W/$c.json" --plot "$W/$c.svg" \
    -- --deepspeed --deepspeed_config $E/configs/$c.json 2>&1 | tee "$W/$c.txt"
done
python3 $E/save_weights.py /tmp/init.pt 2>&1 | tee "$W/save_weights.txt"
python3 -m runtime_check $S --steps 2 --timeout 240 -q --json "$W/zero2_load.json" --plot "$W/zero2_load.svg" \
  -- --deepspeed --deepspeed_config $E/configs/zero2.json --init_weights /tmp/init.pt 2>&1 | tee "$W/zero2_load.txt"
python3 -m dslint memory fixtures/projects/memory --format json > "$W/dslint_memory.json" 2>&1
cd "${OUT:-/tmp/out}" && tar czf evidence.tgz memory && rm -rf memory && ls -la
