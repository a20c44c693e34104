"""passes/resolve_views.py keeps meaning: kernels with kernel-side subviews give the same data
in the interpreter before the pass (SUBVIEW run as an op), after it (offsets on the parameter
view, with and without debug checks) and after view lowering, and NumPy agrees."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import qdarray as qd
from qdarray.kernels import frontend, interp
from qdarray.kernels.ir import Op, format_kernel, instrs
from qdarray.kernels.launch import packer, signature
from qdarray.kernels.passes import lower_views, resolve_views, simplify
from qdarray.kernels.verify import verify


@qd.func
def bump(w, value):
    for k in range(w.size):
        w[k] += value


@qd.kernel
def windows(v: qd.BufferView[qd.int64], a: int, n: int, c: int):
    w = v.subview(a, n)
    bump(w[c:], 10)
    for i in range(w.size):
        x = w[i:i + 1]
        x[0] += i


def run_ir(ir, args) -> np.ndarray:
    specs, _ = signature(windows, args)
    native: list = []
    for (name, spec), arg in zip(specs, args, strict=True):
        packer(spec, name, interp=True)(arg, native)
    interp.run(ir, interp.typed_arguments(ir, native))
    return np.asarray(args[0].base).copy()


def reference(size: int, offset: int, a: int, n: int, c: int) -> np.ndarray:
    data = np.arange(size, dtype=np.int64)
    w = data[offset + a:offset + a + n]
    w[c:] += 10
    w += np.arange(n)
    return data


@given(st.data())
def test_resolution_keeps_results(data):
    size = data.draw(st.integers(1, 24))
    offset = data.draw(st.integers(0, size))
    vsize = data.draw(st.integers(0, size - offset))
    a = data.draw(st.integers(0, vsize))
    n = data.draw(st.integers(0, vsize - a))
    c = data.draw(st.integers(0, n))

    def fresh():
        base = qd.asarray(np.arange(size, dtype=np.int64))
        return (qd.BufferView(base, offset, vsize), a, n, c)

    specs, _ = signature(windows, fresh())
    raw = verify(frontend.build(windows.source(), specs))
    assert any(i.op is Op.SUBVIEW for i in instrs(raw.body))
    want = reference(size, offset, a, n, c)
    np.testing.assert_array_equal(run_ir(raw, fresh()), want)
    for debug in (False, True):
        resolved = verify(resolve_views(raw, debug=debug))
        assert not any(i.op is Op.SUBVIEW for i in instrs(resolved.body))
        assert any(i.op is Op.CHECK_INDEX for i in instrs(resolved.body)) is debug
        np.testing.assert_array_equal(run_ir(resolved, fresh()), want, err_msg=str(debug))
        lowered = verify(lower_views(simplify(resolved)))
        np.testing.assert_array_equal(run_ir(lowered, fresh()), want, err_msg=str(debug))
    args = fresh()
    windows(*args)
    np.testing.assert_array_equal(np.asarray(args[0].base), want)


def test_parameter_views_only_after_resolution():
    args = (qd.BufferView(qd.asarray(np.zeros(8, np.int64))), 1, 4, 2)
    text = format_kernel(windows.ir(*args))
    assert "SUBVIEW" not in text
    assert "v=%0: BufferView[int64]" in text
