#!/usr/bin/env bash
# The simulation programs and the host time of small launches on an NVIDIA GPU machine.
#
# Run from the repository root (wheels carried in .whl/, as for run_gpu.sh). Prints, and
# writes to $OUT: benchmarks/launch_host_cost.py on cpu and cuda:0, three fresh processes each;
# then benchmarks/gpu/sims_gpu.py (every example: CPU and CUDA values compared, CUDA time of
# forward + backward per iteration) in three fresh processes.
#
#   bash benchmarks/gpu/sims_gpu.sh [host|sims|all]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/qdarray-gpu}"
mkdir -p "$OUT"
WHEELS=$(ls .whl/numpy-2.4*.whl .whl/array_api_compat-*.whl 2>/dev/null)
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site \
    $WHEELS || { echo "installing the carried wheels failed"; exit 1; }
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 QDARRAY_CACHE_DIR=/tmp/qdarray-cache
WHAT="${1:-all}"
if [ "$WHAT" != sims ]; then
    for device in cpu cuda:0; do
        for run in 1 2 3; do
            echo "== launch_host_cost.py --device $device, run $run"
            timeout 120 python3 benchmarks/launch_host_cost.py --device "$device" --runs 5 \
                --json "$OUT/host_${device%%:*}_$run.json" 2>&1 | tail -3
        done
    done
fi
if [ "$WHAT" != host ]; then
    for run in 1 2 3; do
        echo "== sims_gpu.py, run $run"
        timeout 400 python3 benchmarks/gpu/sims_gpu.py --json "$OUT/sims_$run.json" 2>&1 \
            | grep -v Warning | tail -12
    done
fi
