#!/usr/bin/env bash
# One prepared run on a GPU machine (one GPU, 16 cores, at most 10 minutes), the
# work in the order it is owed: (1) the base models of BASE_MODELS_GPU.md, (2) the per-row LoRA
# kernel inside the static backend's decode step, against the dense form, same run, (3) the 7B
# svd_merge timed again and profiled stage by stage (operators.py --profile).
#
# Run from the repository root, with runs/base-models-gpu/corpus.tar.gz (built on the CPU
# by `python benchmarks/base_models_gpu.py --prepare --workers 1`) and .whl copied there: its
# image (Python 3.12) lacks pydantic, which redqueen.settings needs. Fetch its wheels once, on
# a machine with pip (.whl/ is ignored by git):
#   for p in pydantic==2.13.4 pydantic_core==2.46.4 annotated_types==0.7.0 typing_inspection==0.4.2; do
#     python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
#       --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl $p; done
# Everything lands in $OUT
# (default runs/gpu-call): base_models_gpu.json (rewritten after each model; a second call
# skips the models already scored), the kept models' archives, rollout_fused_b64_r32.json,
# operators_cuda.json and gpu_call.log. Each stage gets what is left of BUDGET seconds
# (default 570), the kernel stage at least 150 of them and the merge stage at least 60.
set -u
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
if [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH="$PWD:/tmp/site"
fi
python3 -c "import pydantic" || { echo "gpu_call: pydantic missing (copy .whl beside the checkout)"; exit 2; }
OUT="${OUT:-runs/gpu-call}"
BUDGET="${BUDGET:-570}"
mkdir -p "$OUT"
start=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - start) )); }
log() { echo "gpu_call: $*" | tee -a "$OUT/gpu_call.log"; }

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >> "$OUT/gpu_call.log" 2>&1
log "base models: $(( $(left) - 210 )) s"
timeout $(( $(left) - 210 )) python3 benchmarks/base_models_gpu.py --workers 8 \
    --results "$OUT/base_models_gpu.json" --models-out "$OUT" >> "$OUT/gpu_call.log" 2>&1
log "base models: exit $?"

log "fused LoRA kernel in the decode step: $(( $(left) - 70 )) s"
timeout $(( $(left) - 70 )) python3 benchmarks/rollout.py --device cuda --batch 64 --rank 32 \
    --variants no_adapter static_no_adapter static_mixed_8 static_fused_mixed_8 \
    static_compiled_no_adapter static_compiled_mixed_8 static_compiled_fused_mixed_8 \
    --out "$OUT/rollout_fused_b64_r32.json" >> "$OUT/gpu_call.log" 2>&1
log "rollout: exit $?"

log "svd_merge at the 7B shape, profiled: $(( $(left) - 10 )) s"
timeout $(( $(left) - 10 )) python3 benchmarks/operators.py --device cuda --shapes qwen7b \
    --rank 32 --peft-layers 1 --methods gram+cpu,gram --profile \
    --out "$OUT/operators_cuda.json" >> "$OUT/gpu_call.log" 2>&1
log "operators: exit $?"
tail -c 3000 "$OUT/gpu_call.log"
