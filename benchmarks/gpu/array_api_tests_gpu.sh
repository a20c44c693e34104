#!/usr/bin/env bash
# array-api-tests with cuda:0 as the default device, float32 subnormals on the GPU, and the
# small-operation overhead over CuPy: the GPU half of docs/conformance.md.
#
# Run from the repository root on an NVIDIA GPU machine whose Python 3.12 has numba-cuda and
# CuPy (as for run_gpu.sh). Nothing is downloaded there, so two things travel with the tree:
#   .array-api-tests/  the suite at commit 55fcc60 with its spec submodule, e.g.
#       git clone --recursive https://github.com/data-apis/array-api-tests .array-api-tests
#       git -C .array-api-tests checkout 55fcc60 && git -C .array-api-tests submodule update
#   .whl/              run_gpu.sh's wheels plus the suite's own tools:
#       pip download --only-binary=:all: --python-version 3.12 --no-deps -d .whl \
#           ndindex==1.10.1 pytest-json-report==1.5.0 pytest-metadata==3.1.1
# It prints what the report needs and, when $OUT is set, writes the logs there.
#
#   bash benchmarks/gpu/array_api_tests_gpu.sh        # about 5 minutes
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/qdarray-gpu}"
mkdir -p "$OUT"
SITE=/tmp/site
SUITE="${SUITE:-.array-api-tests}"
unset NUMBA_ENABLE_CUDASIM

if [[ ! -d "$SUITE/array_api_tests" ]]; then
    echo "no array-api-tests checkout at $SUITE (see the comment at the top of this script)"
    exit 2
fi
WHEELS=$(ls .whl/numpy-2.4*.whl .whl/array_api_compat-*.whl .whl/pytest-[0-9]*.whl \
    .whl/pluggy-*.whl .whl/iniconfig-*.whl .whl/pytest_xdist-*.whl .whl/execnet-*.whl \
    .whl/hypothesis-*.whl .whl/sortedcontainers-*.whl .whl/attrs-*.whl .whl/ndindex-*.whl \
    .whl/pytest_json_report-*.whl .whl/pytest_metadata-*.whl 2>/dev/null)
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" \
    $WHEELS || { echo "installing the carried wheels failed"; exit 1; }
export PYTHONPATH="$SITE:$PWD" PYTHONUNBUFFERED=1
export QDARRAY_CACHE_DIR=/tmp/qdarray-cache

echo "== machine"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import numpy, hypothesis, cupy, qdarray as qd; print('numpy', numpy.__version__,
'hypothesis', hypothesis.__version__, 'cupy', cupy.__version__,
'devices', qd.__array_namespace_info__().devices())"

echo "== array-api-tests (55fcc60, --max-examples=20 --derandomize) with cuda:0 as default"
git -C "$SUITE" log --oneline -1 2>/dev/null
PYTHON=python3 WORKERS=8 timeout 420 tools/run_array_api_tests.sh --device cuda:0 "$SUITE" \
    > "$OUT/array_api_tests_cuda.log" 2>&1
echo "exit status $?"
grep -E "^(FAILED|ERROR)" "$OUT/array_api_tests_cuda.log" | cut -c1-220
tail -1 "$OUT/array_api_tests_cuda.log"

echo "== benchmarks/gpu/check_subnormals.py"
timeout 60 python3 benchmarks/gpu/check_subnormals.py cuda:0 2>&1 | tee "$OUT/subnormals.log"
echo "exit status ${PIPESTATUS[0]}"

echo "== benchmarks/compare_numpy.py --device cuda:0 (added us per small call over CuPy)"
timeout 120 python3 benchmarks/compare_numpy.py --device cuda:0 --large 10000000 \
    --peers torch 2>&1 | tee "$OUT/compare_numpy_cuda.log"
