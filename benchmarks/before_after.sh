#!/usr/bin/env bash
# Before / after figures in one run: benchmarks/compare.py (CPU, against NumPy and numba),
# benchmarks/compare_opencl.py (OpenCL device 0, against hand-written OpenCL C and
# pyopencl.array) and benchmarks/warm_start.py (first call of a cached kernel in a new
# process, against a cached numba.njit) for an earlier commit's tree and for this tree,
# alternating, so that both sides see the same machine state. Ratios against the peers are
# the figures to compare; absolute times move with the machine's load.
#
#   bash benchmarks/before_after.sh BEFORE_COMMIT [OUT_DIR]
#
# Each tree gets its own kernel cache (OUT_DIR/cache-before, OUT_DIR/cache-after); logs go to
# OUT_DIR (default /tmp/qdarray-before-after). PYTHON names the interpreter (default python3).
set -uo pipefail
BEFORE="${1:?usage: before_after.sh BEFORE_COMMIT [OUT_DIR]}"
OUT="${2:-/tmp/qdarray-before-after}"
PY="${PYTHON:-python3}"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$OUT"
TREE="$OUT/tree-before"
rm -rf "$TREE" && mkdir -p "$TREE"
git -C "$HERE" archive "$BEFORE" | tar -x -C "$TREE" || exit 1

run() {  # run SIDE TREE LOG COMMAND...: with TREE's qdarray first on the path
    local side="$1" tree="$2" log="$3"
    shift 3
    echo "== $side: $*" | tee -a "$OUT/$log"
    (cd "$tree" && PYTHONPATH="$tree" QDARRAY_CACHE_DIR="$OUT/cache-$side" "$PY" "$@") \
        2>&1 | tee -a "$OUT/$log"
}

rm -f "$OUT"/*.log
uptime | tee "$OUT/machine.log"
both() {  # both LOG COMMAND...: the command on the earlier tree, then on this one
    local log="$1"
    shift
    run before "$TREE" "${log}_before.log" "$@"
    run after "$HERE" "${log}_after.log" "$@"
}

both compare benchmarks/compare.py --peers numpy numba --repeat 7 --png ""
both compare_opencl benchmarks/compare_opencl.py --n 4194304 --repeat 15
both warm_start benchmarks/warm_start.py --runs 7
uptime | tee -a "$OUT/machine.log"
