#!/usr/bin/env bash
# Scale-out on Dask on NVIDIA GPUs: benchmarks/dask_dynamic_loop.py on 1 GPU and, when the
# machine has two, on 2 GPUs (the speed-up of two over one; docs/benchmarks.md), after a check
# of map_kernel, its gradient and reductions on cuda:0 chunks against one array (--check).
#
# Run from the repository root on a machine whose Python has numba, numba-cuda and CuPy. Like
# run_gpu.sh it first installs the wheels carried in .whl/ into /tmp/site: NumPy 2.4 and
# array-api-compat (as run_gpu.sh), and Dask's: dask, distributed, partd, locket, tblib,
# tornado, zict (`pip download` them as docs/cuda.md says; the image has the rest of their
# dependencies). dask-cuda is not needed: without it the benchmark starts one Nanny per GPU
# with that GPU first in CUDA_VISIBLE_DEVICES, which is what LocalCUDACluster does.
#
#   bash benchmarks/gpu/run_dask_gpu.sh           # N = 1e7 and 1e8; a few minutes
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/qdarray-gpu}"
mkdir -p "$OUT"
SITE=/tmp/site

WHEELS=$(ls .whl/numpy-2.4*.whl .whl/array_api_compat-*.whl .whl/dask-*.whl \
    .whl/distributed-*.whl .whl/partd-*.whl .whl/locket-*.whl .whl/tblib-*.whl \
    .whl/tornado-*.whl .whl/zict-*.whl 2>/dev/null)
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" \
    $WHEELS || { echo "installing the carried wheels failed"; exit 1; }
export PYTHONPATH="$SITE:$PWD" PYTHONUNBUFFERED=1
export QDARRAY_CACHE_DIR=/tmp/qdarray-cache
GPUS=$(nvidia-smi --list-gpus | wc -l)
echo "== $GPUS GPU(s)"; nvidia-smi --query-gpu=name,memory.total --format=csv,noheader

echo "== benchmarks/dask_dynamic_loop.py, N = 1e7 and 1e8"
COUNTS=1; [ "$GPUS" -ge 2 ] && COUNTS="1 2"
CHECK=--check   # the first run compares results on the cluster with one array
for N in 1e7 1e8; do
    # one block per GPU of the 2-GPU run (the 1-GPU run gets both)
    timeout 400 python3 benchmarks/dask_dynamic_loop.py --gpus $COUNTS --n $N --blocks 2 \
        --repeat 5 $CHECK --json "$OUT/dask_gpu_$N.json" 2>&1 | tee "$OUT/dask_gpu_$N.log"
    CHECK=
done
