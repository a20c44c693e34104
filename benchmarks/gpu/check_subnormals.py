"""Which namespace operations on a CUDA GPU give NumPy's results for float32 subnormal input.

CuPy compiles its kernels with -ftz=true (docs/cuda.md), so float32 subnormals read as zero
there; this script prints, for each operation, whether the GPU's result equals NumPy's, and
the device's `capabilities()["float32 subnormals"]`. It exits with 1 when the capability flag
says subnormals are kept but an operation disagrees (the flag must not lie), else 0.

    NUMBA_ENABLE_CUDASIM=0 .venv/bin/python benchmarks/gpu/check_subnormals.py [cuda:0]
"""

from __future__ import annotations

import sys

import numpy as np

import qdarray as qd

VALUES = np.array([7e-41, 1.4e-45, -3e-39, 1.0, 0.0, -0.0, 7.2e-41], dtype=np.float32)

# name -> (qdarray call, NumPy call) on float32 arrays holding subnormals
CASES = {
    "all": (lambda x: qd.all(x[:1]), lambda a: np.all(a[:1])),
    "any": (lambda x: qd.any(x[:3]), lambda a: np.any(a[:3])),
    "count_nonzero": (qd.count_nonzero, np.count_nonzero),
    "x != 0": (lambda x: x != 0, lambda a: a != 0),
    "x == 0": (lambda x: x == 0, lambda a: a == 0),
    "astype bool": (lambda x: qd.astype(x, qd.bool), lambda a: a.astype(bool)),
    "nonzero": (lambda x: qd.nonzero(x)[0], lambda a: np.nonzero(a)[0]),
    "where": (lambda x: qd.where(x != 0, 1.0, 2.0), lambda a: np.where(a != 0, 1.0, 2.0)),
    "x * 2": (lambda x: x * 2.0, lambda a: a * np.float32(2.0)),
    "x / 2": (lambda x: x / 2.0, lambda a: a / np.float32(2.0)),
    "x + x": (lambda x: x + x, lambda a: a + a),
    "sum": (qd.sum, np.sum),
    "max": (qd.max, np.max),
    "abs": (qd.abs, np.abs),
    "sign": (qd.sign, np.sign),
    "sqrt": (lambda x: qd.sqrt(qd.abs(x)), lambda a: np.sqrt(np.abs(a))),
    "copy to host": (lambda x: x, lambda a: a),
    "astype float64": (lambda x: qd.astype(x, qd.float64), lambda a: a.astype(np.float64)),
    "sort": (qd.sort, np.sort),
}


def main() -> int:
    device = qd.Device(sys.argv[1] if len(sys.argv) > 1 else "cuda:0")
    flag = device.backend.capabilities(device).get("float32 subnormals")
    print(f"{device} ({device.backend.capabilities(device).get('device name')}): "
          f'capabilities()["float32 subnormals"] = {flag}')
    x = qd.asarray(VALUES, device=device)
    differ = []
    for name, (on_device, on_numpy) in CASES.items():
        with np.errstate(all="ignore"):
            want = np.asarray(on_numpy(VALUES.copy()))
        got = np.asarray(on_device(x).to_device("cpu"))
        same = got.dtype == want.dtype and got.shape == want.shape and (
            got.tobytes() == want.tobytes())
        if not same:
            differ.append(name)
        print(f"  {name:<16} {'same as NumPy' if same else 'DIFFERS'}: {got!r} vs {want!r}")
    print(f"{len(differ)} of {len(CASES)} operations differ from NumPy: {', '.join(differ)}")
    if flag and differ:
        print("the capability flag says subnormals are kept, but operations differ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
