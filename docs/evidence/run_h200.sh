#!/usr/bin/env bash
# The H200 evidence of issue 14 (docs/runtime_check.md, "GPU: resume after initialize, NVML, pipeline").
# Run from a copy of the project root (dslint/, runtime_check/, fixtures/runtime/) with the wheels of
# ../shared/device/make-wheels.sh in WHEELS (default ../.whl); writes its reports and run.log to OUT.
set -u
OUT=${OUT:-/tmp/out}
WHEELS=${WHEELS:-../.whl}
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
log() { tee -a "$OUT/run.log"; }
{
  date -u
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c "import sys, torch, deepspeed, transformers, pynvml; print(sys.version.split()[0], torch.__version__, deepspeed.__version__, transformers.__version__, 'nvidia-ml-py', pynvml.nvmlSystemGetDriverVersion() if not pynvml.nvmlInit() else '')"
  python3 -m dslint fix --unsafe-fixes --diff fixtures/runtime/hf_resume_after_initialize.py
} 2>&1 | log
for stage in 2 3; do
  echo "== hf_resume_after_initialize --size large --zero-stage $stage" | log
  timeout 250 python3 -m runtime_check fixtures/runtime/hf_resume_after_initialize.py -q --unsafe-fixes --timeout 110 \
    --json "$OUT/hf-zero$stage-large.json" -- --size large --zero-stage $stage 2>&1 | log
done
echo "== pipeline_train_batch (harness, 2 train_batch calls)" | log
RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29533 timeout 90 \
  python3 runtime_check/harness.py --report "$OUT/pipeline.json" --steps 2 fixtures/runtime/pipeline_train_batch.py \
  > "$OUT/pipeline.log" 2>&1
python3 -c "import json; r = json.load(open('$OUT/pipeline.json')); print(r['status'], r['steps_completed'], [p['name'] for p in r['phases']], r['nvml'])" 2>&1 | log
echo "== load_after_initialize --size large (DSL201; both runs train: NVML rows side by side)" | log
timeout 150 python3 -m runtime_check fixtures/runtime/load_after_initialize.py -q --timeout 70 \
  --json "$OUT/zero2-nvml-large.json" -- --size large 2>&1 | log
date -u | log
