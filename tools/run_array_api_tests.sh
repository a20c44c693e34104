#!/usr/bin/env bash
# Run the array-api-tests conformance suite against qdarray with its expected-failures file.
#
# Usage: tools/run_array_api_tests.sh SUITE_CHECKOUT [extra pytest arguments...]
#
#   SUITE_CHECKOUT  a clone of https://github.com/data-apis/array-api-tests with its
#                   array-api submodule (git clone --recursive).
#   Extra arguments go to pytest after the defaults, so later ones win, e.g.
#   `--max-examples=200` or `array_api_tests/test_linalg.py -k eigh`.
#
# Environment: PYTHON (default: the repository's .venv/bin/python, else python3),
#              WORKERS (default: 2, the number of pytest-xdist processes).
set -euo pipefail

if [[ $# -lt 1 || ! -d "$1/array_api_tests" ]]; then
    echo "usage: $0 SUITE_CHECKOUT [pytest arguments...]" >&2
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
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
exec "$python" -m pytest "${paths[@]}" \
    -n "${WORKERS:-2}" --max-examples=20 --derandomize --disable-deadline \
    -p no:cacheprovider -q -rxXs \
    --xfails-file "$repo/tests/array_api_xfails.txt" \
    "$@"
