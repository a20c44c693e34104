#!/usr/bin/env bash
# The Vulkan runtime on an NVIDIA GPU through the driver's own Vulkan implementation, on a
# machine whose image has no Vulkan loader.
#
# Carried in .whl/ (ignored by git; fetch them on a machine with Debian's and PyPI's indexes):
#   apt-get download libvulkan1                       # libvulkan1_<version>_amd64.deb: the loader
#   pip download --no-deps -d .whl vulkan cffi pycparser
# plus the wheels benchmarks/gpu/run_gpu.sh installs (NumPy 2.4, array-api-compat, pytest, ...).
#
# The script unpacks libvulkan.so.1 from the .deb, finds (or writes) the NVIDIA ICD JSON and
# points VK_DRIVER_FILES / VK_ICD_FILENAMES at it, then runs on the GPU's Vulkan device:
#   1. tests/vulkan (runtime, SPIR-V writer, arrays, the namespace's kernels with the OpenCL
#      device's namespace tests, math against NumPy, the shared kernel / debug / autodiff suites;
#      the whole-program suites skip without JAX, which is not carried);
#   2. saxpy 1e8 float32 through the runtime against CuPy's (compare_vulkan_runtime.py);
#   3. benchmarks/compare.py on vulkan:0 and on cuda:0: saxpy 1e8 through a qdarray kernel and
#      the dynamic-loop kernel forward + reverse at N = 1e7 (goals: saxpy >= 90% of the CUDA
#      device's bandwidth, fwd+rev within 1.5x of the CUDA device's time);
#   4. benchmarks/compare_reducer.py on vulkan:0 and cuda:0 at 1e8 int32 (goal: the reducer on
#      Vulkan at >= 70% of cupy.max's bandwidth, the "qd.max" line of the cuda:0 run);
#   5. benchmarks/gpu/profile_vulkan.py: launch overhead and its profile, and device times of
#      saxpy, the dynamic loop and the reducer under several dispatch shapes (step "profile",
#      not part of "all").
# It prints everything a report needs and, when $OUT is set, writes the logs there.
#
#   bash benchmarks/gpu/vulkan_gpu.sh [all|tests|saxpy|compare|reducer|profile]  (default all; each
#   step alone fits a 10-minute command)
set -uo pipefail
STEP="${1:-all}"
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/qdarray-vulkan}"
VK=/tmp/qdarray-vk
SITE=/tmp/site
mkdir -p "$OUT" "$VK"

# -- the loader --------------------------------------------------------------------------------
DEB=$(ls .whl/libvulkan1_*.deb 2>/dev/null | head -1)
if [ -z "$DEB" ]; then echo "no .whl/libvulkan1_*.deb carried (apt-get download libvulkan1)"; exit 1; fi
# The NVIDIA driver's Vulkan library (libGLX_nvidia) needs GLVND's dispatch libraries, which an
# image without OpenGL lacks: carry them too (apt-get download libglvnd0 libglx0 libegl1 libgl1
# libopengl0 libgles2); every .deb in .whl/ is unpacked beside the loader.
for DEB in .whl/*.deb; do
if command -v dpkg-deb >/dev/null 2>&1; then
    dpkg-deb -x "$DEB" "$VK"
else  # a .deb is an ar archive holding data.tar.*
    python3 - "$DEB" "$VK" <<'PY'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
pos = 8
while pos < len(data):
    name = data[pos:pos + 16].decode().strip().rstrip("/")
    size = int(data[pos + 48:pos + 58])
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(data[pos + 60:pos + 60 + size])).extractall(sys.argv[2])
    pos += 60 + size + (size & 1)
PY
fi
done
LIBDIR=$(dirname "$(find "$VK" -name 'libvulkan.so.1' | head -1)")
export LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# -- the NVIDIA ICD ----------------------------------------------------------------------------
ICD="${VK_DRIVER_FILES:-}"
[ -n "$ICD" ] && [ ! -f "$ICD" ] && ICD=""
for f in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json \
         /usr/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/nvidia_icd.json \
         /usr/share/vulkan/icd.d/nvidia_icd.x86_64.json; do
    [ -z "$ICD" ] && [ -f "$f" ] && ICD="$f"
done
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do  # the driver's libraries
    [ -d "$d" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$d"
done
if [ -z "$ICD" ]; then
    NVLIB=$( (ldconfig -p 2>/dev/null | awk '/libGLX_nvidia.so.0/{print $NF; exit}') || true)
    [ -z "$NVLIB" ] && NVLIB=$(ls /usr/lib/x86_64-linux-gnu/libGLX_nvidia.so.0 /usr/lib64/libGLX_nvidia.so.0 2>/dev/null | head -1)
    if [ -z "$NVLIB" ]; then echo "no NVIDIA Vulkan driver library (libGLX_nvidia.so.0) found"; exit 1; fi
    ICD="$VK/nvidia_icd.json"
    printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s", "api_version": "1.3"}}\n' \
        "$NVLIB" > "$ICD"
fi
export VK_DRIVER_FILES="$ICD" VK_ICD_FILENAMES="$ICD"
export QDARRAY_VULKAN_DEVICE="${QDARRAY_VULKAN_DEVICE:-nvidia}"

# -- Python packages ---------------------------------------------------------------------------
WHEELS=$(ls .whl/numpy-2.4*.whl .whl/array_api_compat-*.whl .whl/pytest-[0-9]*.whl \
    .whl/pluggy-*.whl .whl/iniconfig-*.whl .whl/pytest_xdist-*.whl .whl/execnet-*.whl \
    .whl/hypothesis-*.whl .whl/sortedcontainers-*.whl \
    .whl/attrs-*.whl .whl/vulkan-*.whl .whl/cffi-*.whl .whl/pycparser-*.whl 2>/dev/null)
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$SITE" \
    $WHEELS || { echo "installing the carried wheels failed"; exit 1; }
export PYTHONPATH="$SITE:$PWD" PYTHONUNBUFFERED=1

{
    echo "== machine"
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    echo "loader: $LIBDIR/libvulkan.so.1  ICD: $ICD"
    cat "$ICD"
    python3 - <<'PY'
import qdarray as qd
from qdarray.backends.vulkan.backend import _instance
print("vulkan devices:", [(p.name, p.driver) for p in _instance.physical_devices()])
print("left out:", _instance.unusable())
st = _instance.state(0)
print(st.label, st.kind, st.features, st.limits)
PY
} 2>&1 | tee "$OUT/machine.log"

if [ "$STEP" = all ] || [ "$STEP" = tests ]; then
    echo "== tests/vulkan on the GPU"
    timeout 540 python3 -m pytest -q -p no:cacheprovider -p no:benchmark -n 8 -rfEs tests/vulkan \
        > "$OUT/tests_vulkan.log" 2>&1
    echo "exit status $?"
    tail -40 "$OUT/tests_vulkan.log"
fi

if [ "$STEP" = all ] || [ "$STEP" = saxpy ]; then
    echo "== saxpy 1e8 float32: the Vulkan runtime against CuPy"
    timeout 300 python3 benchmarks/compare_vulkan_runtime.py --n 100000000 --repeat 20 \
        --json "$OUT/vulkan_saxpy.json" 2>&1 | tee "$OUT/vulkan_saxpy.log"
fi

if [ "$STEP" = all ] || [ "$STEP" = compare ]; then
    echo "== compare.py: saxpy 1e8 and the dynamic loop at N = 1e7, Vulkan then CUDA"
    for dev in vulkan:0 cuda:0; do
        timeout 280 python3 benchmarks/compare.py --device "$dev" --n 10000000 \
            --saxpy-n 100000000 --repeat 7 --peers --png "" \
            --json "$OUT/compare_${dev%%:*}.json" 2>&1 | tee "$OUT/compare_${dev%%:*}.log"
    done
fi

if [ "$STEP" = all ] || [ "$STEP" = reducer ]; then
    echo "== the max-reducer at 1e8 int32, Vulkan then CUDA (cupy.max: the cuda:0 qd.max line)"
    for dev in vulkan:0 cuda:0; do
        timeout 280 python3 benchmarks/compare_reducer.py "$dev" 100000000 2>&1 \
            | tee "$OUT/reducer_${dev%%:*}.log"
    done
fi

if [ "$STEP" = profile ]; then
    echo "== launch overhead and dispatch shapes on vulkan:0 (profile_vulkan.py)"
    timeout 500 python3 benchmarks/gpu/profile_vulkan.py --device vulkan:0 --n 10000000 \
        --saxpy-n 100000000 --json "$OUT/profile_vulkan.json" 2>&1 | tee "$OUT/profile_vulkan.log"
fi
