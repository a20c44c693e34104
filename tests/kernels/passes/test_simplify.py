"""Passes keep meaning: random kernels give the same results in the interpreter before and
after each pass."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from kernel_programs import arguments, kernel_sources, load_kernel

import qdarray as qd
from qdarray.kernels import frontend, interp
from qdarray.kernels.ir import Op, format_kernel, instrs
from qdarray.kernels.launch import packer, signature
from qdarray.kernels.passes import bounds_checks, lower_views, simplify
from qdarray.kernels.verify import verify


def _interpret(ir, kern, args):
    """Run `ir` in the interpreter on `args`; the output array's contents afterwards."""
    specs, _ = signature(kern, args)
    packers = [packer(spec, name, interp=True) for name, spec in specs]
    out = np.zeros_like(args[-1])
    native = []
    for p, a in zip(packers, args[:-1] + (out,), strict=True):
        p(a, native)
    interp.run(ir, interp.typed_arguments(ir, native))
    return out


@settings(max_examples=40)
@given(source=kernel_sources(), seed=st.integers(0, 2**16))
def test_passes_keep_results(program_dir, source, seed):
    kern = load_kernel(source, program_dir)
    args = arguments(seed)
    specs, _ = signature(kern, args)
    try:
        raw = verify(frontend.build(kern.source(), specs))
    except qd.KernelSyntaxError as exc:  # e.g. a constant division by zero
        assume("constant expression" not in str(exc))
        raise
    before = _interpret(raw, kern, args)
    for step in (simplify, bounds_checks, lower_views):
        after_ir = verify(step(raw))
        np.testing.assert_array_equal(_interpret(after_ir, kern, args), before,
                                      err_msg=f"{step.__name__}\n{source}")


def test_simplify_folds_constants_and_drops_dead_code(program_dir):
    src = ("import qdarray as qd\n\n\n@qd.kernel\ndef k(x: qd.Array[qd.int64, 1]):\n"
           "    unused = x.shape[0] * 2\n    c = 3 * 4 + 1\n    x[0] = qd.int64(c) * 2 + 1\n")
    kern = load_kernel(src, program_dir, "k")
    text = format_kernel(kern.ir(np.zeros(2, np.int64)))
    assert "MUL" not in text and "SHAPE" not in text
    assert "CONST 27 int64" in text


def test_simplify_takes_constant_branches(program_dir):
    src = ("import qdarray as qd\n\n\n@qd.kernel\ndef k(x: qd.Array[qd.int64, 1]):\n"
           "    for i in range(x.shape[0]):\n"
           "        if qd.int64(2) > qd.int64(1):\n            x[i] = 1\n"
           "        else:\n            x[i] = 2\n")
    kern = load_kernel(src, program_dir, "k")
    ir = kern.ir(np.zeros(2, np.int64))
    assert not any(i.op is Op.CONST and i.attrs == (2, qd.int64) for i in instrs(ir.body))
    assert "if" not in format_kernel(ir)
