#!/usr/bin/env bash
# The CUDA test set and benchmarks on an NVIDIA GPU (H100 / H200 class).
#
# Run from the repository root on a machine whose Python has numba, numba-cuda, CuPy (CUDA 13),
# PyTorch and JAX. Its NumPy may be too new for numba-cuda, so the script first installs the
# wheels carried in .whl/ (NumPy 2.4, array-api-compat, pytest, pytest-xdist, hypothesis and
# their dependencies; downloaded with `pip download`, see docs/cuda.md) into /tmp/site, ahead
# of the system's packages on PYTHONPATH. It prints everything a report needs and, when $OUT
# is set, writes the logs and the benchmark figures (compare_cuda.json) there.
#
#   bash benchmarks/gpu/run_gpu.sh            # a few minutes (each step has a timeout)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/qdarray-gpu}"
mkdir -p "$OUT"
SITE=/tmp/site

WHEELS=$(ls .whl/numpy-2.4*.whl .whl/array_api_compat-*.whl .whl/pytest-[0-9]*.whl \
    .whl/pluggy-*.whl .whl/iniconfig-*.whl .whl/pytest_xdist-*.whl .whl/execnet-*.whl \
    .whl/hypothesis-*.whl .whl/sortedcontainers-*.whl .whl/attrs-*.whl 2>/dev/null)
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" \
    $WHEELS || { echo "installing the carried wheels failed"; exit 1; }
export PYTHONPATH="$SITE:$PWD" PYTHONUNBUFFERED=1
export QDARRAY_CACHE_DIR=/tmp/qdarray-cache

{
    echo "== machine"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 - <<'PY'
import sys
import numpy, numba
print("python", sys.version.split()[0], "numpy", numpy.__version__, "numba", numba.__version__)
for name in ("numba_cuda", "cupy", "torch", "jax"):
    try:
        module = __import__(name)
        print(name, getattr(module, "__version__", "?"))
    except Exception as exc:
        print(name, "does not import:", type(exc).__name__, exc)
import qdarray as qd
print("qdarray devices:", qd.__array_namespace_info__().devices())
PY
} 2>&1 | tee "$OUT/machine.log"

# The simulated run needs CPU only: it runs beside the GPU tests.
( timeout 100 python3 -m pytest -q -p no:cacheprovider -p no:benchmark \
    tests/cuda/test_cuda_simulator.py > "$OUT/tests_simulator.log" 2>&1
  echo "exit status $?" >> "$OUT/tests_simulator.log" ) &
SIMULATOR=$!

echo "== CUDA test set on the GPU (tests/cuda/device, PTX compiles, direct launches)"
timeout 200 python3 -m pytest -q -p no:cacheprovider -p no:benchmark -n 4 -rfEs \
    tests/cuda/device tests/cuda/test_cuda_ptx.py tests/cuda/test_cuda_direct.py \
    tests/cuda/test_cuda_pow_check.py > "$OUT/tests_gpu.log" 2>&1
echo "exit status $?"
tail -60 "$OUT/tests_gpu.log"

echo "== the same tests under numba's simulator (what CI runs)"
wait $SIMULATOR
tail -15 "$OUT/tests_simulator.log"

echo "== benchmarks/gpu/profile_launch.py"
timeout 90 python3 benchmarks/gpu/profile_launch.py --json "$OUT/profile_launch.json" 2>&1 \
    | tee "$OUT/profile_launch.log"

echo "== benchmarks/compare_cuda.py"
timeout 200 python3 benchmarks/compare_cuda.py --json "$OUT/compare_cuda.json" 2>&1 \
    | tee "$OUT/compare_cuda.log"

echo "== benchmarks/compare_tape.py: the mixed program (array code, dynamic-loop kernel, reduction)"
timeout 200 python3 benchmarks/compare_tape.py --device cuda:0 --only mixed 2>&1 \
    | tee "$OUT/compare_tape.log"

echo "== benchmarks/gpu/tapes_gpu.py: the reverse against its tape-traffic bound, against JAX, and adstack memory (device allocator) and checkpointing"
timeout 500 python3 benchmarks/gpu/tapes_gpu.py --json "$OUT/tapes_gpu.json" 2>&1 \
    | tee "$OUT/tapes_gpu.log"
