#!/usr/bin/env bash
# The OpenCL device on an NVIDIA GPU through the driver's OpenCL library: the OpenCL test set
# and benchmarks/compare_opencl.py (qdarray's namespace kernels and user kernels against
# pyopencl.array and hand-written OpenCL C), optionally also for an earlier commit in the same
# run, so that before / after ratios come from one machine state.
#
# Carried in .whl/ (ignored by git): the wheels benchmarks/gpu/run_gpu.sh installs (NumPy 2.4,
# array-api-compat, pytest, pytest-xdist, hypothesis, ...) plus pyopencl's:
#   pip download --no-deps -d .whl pyopencl pytools platformdirs typing_extensions siphash24 mako
# The script registers libnvidia-opencl.so.1 with the ICD loader (OCL_ICD_VENDORS), keeps only
# NVIDIA's platform (QDARRAY_OPENCL_PLATFORM=nvidia) and prints what a report needs; with $OUT
# set it writes the logs there.
#
#   bash benchmarks/gpu/opencl_gpu.sh [tests|bench|all] [BEFORE_COMMIT]
#
# BEFORE_COMMIT (needs the repository's .git): compare_opencl.py also runs on that commit's
# tree, right after this one's. Each step fits a 10-minute command.
set -uo pipefail
STEP="${1:-all}"
BEFORE="${2:-}"
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/qdarray-opencl}"
mkdir -p "$OUT"
SITE=/tmp/site

WHEELS=$(ls .whl/numpy-2.4*.whl .whl/array_api_compat-*.whl .whl/pytest-[0-9]*.whl \
    .whl/pluggy-*.whl .whl/iniconfig-*.whl .whl/pytest_xdist-*.whl .whl/execnet-*.whl \
    .whl/hypothesis-*.whl .whl/sortedcontainers-*.whl .whl/attrs-*.whl .whl/pyopencl-*.whl \
    .whl/pytools-*.whl .whl/platformdirs-*.whl .whl/typing_extensions-*.whl \
    .whl/siphash24-*.whl .whl/mako-*.whl 2>/dev/null)
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" \
    $WHEELS || { echo "installing the carried wheels failed"; exit 1; }
export PYTHONUNBUFFERED=1 QDARRAY_CACHE_DIR=/tmp/qdarray-cache QDARRAY_OPENCL_PLATFORM=nvidia

# -- NVIDIA's OpenCL library for the ICD loader ------------------------------------------------
LIB=$( (ldconfig -p 2>/dev/null | awk '/libnvidia-opencl.so.1/{print $NF; exit}') || true)
[ -z "$LIB" ] && LIB=$(ls /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 \
    /usr/lib64/libnvidia-opencl.so.1 2>/dev/null | head -1)
if [ -z "$LIB" ]; then echo "no libnvidia-opencl.so.1 on this machine"; exit 1; fi
mkdir -p /tmp/qdarray-icd
echo "$LIB" > /tmp/qdarray-icd/nvidia.icd
export OCL_ICD_VENDORS=/tmp/qdarray-icd

run_in() {  # run_in TREE COMMAND...: with TREE's qdarray first on the path
    local tree="$1"
    shift
    (cd "$tree" && PYTHONPATH="$SITE:$tree" "$@")
}

run_in "$PWD" python3 - <<'PY' 2>&1 | tee "$OUT/machine.log"
import sys
import numpy, pyopencl
print("python", sys.version.split()[0], "numpy", numpy.__version__, "pyopencl",
      pyopencl.VERSION_TEXT)
import qdarray as qd
from qdarray.backends.opencl.namespace import _runtime
print("OpenCL devices:", [s.name for s in _runtime.devices()], "left out:", _runtime.unusable())
PY

if [ "$STEP" = all ] || [ "$STEP" = tests ]; then
    echo "== tests/opencl on the GPU"
    run_in "$PWD" timeout 500 python3 -m pytest -q -p no:cacheprovider -p no:benchmark -n 4 -rfEs tests/opencl \
        > "$OUT/tests_opencl.log" 2>&1
    echo "exit status $?"
    tail -30 "$OUT/tests_opencl.log"
fi

if [ "$STEP" = all ] || [ "$STEP" = bench ]; then
    ARGS=(--n 268435456 --repeat 30 --peak-gbs 4800)
    echo "== benchmarks/compare_opencl.py ${ARGS[*]} (this tree)"
    run_in "$PWD" timeout 250 python3 benchmarks/compare_opencl.py "${ARGS[@]}" 2>&1 \
        | tee "$OUT/compare_opencl.log"
    if [ -n "$BEFORE" ]; then
        rm -rf /tmp/qdarray-before && mkdir -p /tmp/qdarray-before
        git archive "$BEFORE" | tar -x -C /tmp/qdarray-before || exit 1
        echo "== benchmarks/compare_opencl.py ${ARGS[*]} ($BEFORE)"
        run_in /tmp/qdarray-before timeout 250 python3 benchmarks/compare_opencl.py "${ARGS[@]}" \
            2>&1 | tee "$OUT/compare_opencl_before.log"
    fi
fi
