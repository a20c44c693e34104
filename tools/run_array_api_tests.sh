#!/usr/bin/env bash
# Run the array-api-tests conformance suite against qdarray, on a chosen device.
#
# Usage: tools/run_array_api_tests.sh [--device DEVICE] SUITE_CHECKOUT [extra pytest arguments...]
#
#   --device DEVICE  the default device the suite's arrays are created on: cpu (the default),
#                   cuda:0, opencl:0, ... (qdarray's QDARRAY_DEFAULT_DEVICE). Without a GPU,
#                   NUMBA_ENABLE_CUDASIM=1 in the environment makes cuda:0 numba's simulated
#                   device.
#   SUITE_CHECKOUT  a clone of https://github.com/data-apis/array-api-tests with its
#                   array-api submodule (git clone --recursive).
#   Extra arguments go to pytest after the defaults, so later ones win, e.g.
#   `--max-examples=200` or `array_api_tests/test_linalg.py -k eigh`.
#
# Environment: PYTHON (default: the repository's .venv/bin/python, else python3),
#              WORKERS (default: 2, the number of pytest-xdist processes).
set -euo pipefail

device="${QDARRAY_DEFAULT_DEVICE:-cpu}"
if [[ $# -ge 2 && "$1" == "--device" ]]; then
    device="$2"
    shift 2
elif [[ $# -ge 1 && "$1" == --device=* ]]; then
    device="${1#--device=}"
    shift
fi

if [[ $# -lt 1 || ! -d "$1/array_api_tests" ]]; then
    echo "usage: $0 [--device DEVICE] SUITE_CHECKOUT [pytest arguments...]" >&2
    echo "SUITE_CHECKOUT must be an array-api-tests clone (it has array_api_tests/)." >&2
    exit 2
fi

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
suite="$(cd "$1" && pwd)"
shift

python="${PYTHON:-}"
if [[ -z "$python" ]]; then
    if [[ -x "$repo/.venv/bin/python" ]]; then
        python="$repo/.venv/bin/python"
    else
        python="python3"
    fi
fi

# Check the device before the suite starts: a missing device would otherwise show as
# hundreds of identical errors.
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
export QDARRAY_DEFAULT_DEVICE="$device"
"$python" - "$device" <<'EOF'
import sys

import qdarray as qd

want = qd.Device(sys.argv[1])
try:
    present = qd.__array_namespace_info__().devices()
except Exception as exc:  # noqa: BLE001 - report whatever stops the listing
    sys.exit(f"run_array_api_tests.sh: cannot list devices: {exc}")
if want not in present:
    sys.exit(f"run_array_api_tests.sh: device {want} is not present here; present: "
             f"{', '.join(map(str, present))}.")
got = qd.__array_namespace_info__().default_device()
if got != want:
    sys.exit(f"run_array_api_tests.sh: QDARRAY_DEFAULT_DEVICE={want} but qdarray's default "
             f"device is {got}; this qdarray does not read the variable.")
print(f"array-api-tests on {want} ({qd.__file__})")
EOF

# Without explicit test paths, run the whole suite.
paths=(array_api_tests/)
for arg in "$@"; do
    if [[ "$arg" == array_api_tests* ]]; then
        paths=()
        break
    fi
done

cd "$suite"
export ARRAY_API_TESTS_MODULE=qdarray
exec "$python" -m pytest "${paths[@]}" \
    -n "${WORKERS:-2}" --max-examples=20 --derandomize --disable-deadline \
    -p no:cacheprovider -q -rfEs \
    "$@"
