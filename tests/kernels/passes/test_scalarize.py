"""scalarize: vector and matrix code gives the same results in the interpreter before the pass
(VEC_PACK, VEC_ELEM and vector locals run as ops on tuples) and after it (scalars only), and
afterwards no vector type is left."""

from __future__ import annotations

import numpy as np

import qdarray as qd
from qdarray.kernels import frontend, interp
from qdarray.kernels.ir import Op, Var, instrs
from qdarray.kernels.launch import packer, signature
from qdarray.kernels.passes import scalarize
from qdarray.kernels.vector_types import VectorType
from qdarray.kernels.verify import verify


@qd.func
def step(p: qd.vec2, m: qd.mat2) -> qd.vec2:
    if p.x > 0.0:
        return m @ p
    return -p


@qd.kernel
def program(x: qd.Array[qd.vec2, 1], m: qd.Array[qd.mat2, 1], n: qd.Array[qd.int32, 1],
            out: qd.Array[qd.vec2, 1]):
    for i in range(x.shape[0]):
        p = x[i]
        a = m[i]
        for k in range(n[i]):
            p = step(p, a) + 0.25
            a[0, 1] = a[0, 1] * 0.5
            q = p.yx if k % 2 == 0 else p
            p[0] += q.x
        out[i] = p + qd.math.normalize(p, 0.5)


def _run(ir, args):
    specs, _ = signature(program, args)
    native: list = []
    for (name, spec), a in zip(specs, args, strict=True):
        packer(spec, name, interp=True)(a, native)
    interp.run(ir, interp.typed_arguments(ir, native))
    return args[-1].copy()


def _has_vectors(ir) -> bool:
    """Whether a value or a local of `ir` has a vector type."""
    for i in instrs(ir.body):
        if i.result is not None and isinstance(i.result.type, VectorType):
            return True
        if any(isinstance(a, Var) and isinstance(a.dtype, VectorType) for a in i.attrs):
            return True
    return False


def test_scalarize_keeps_results_and_leaves_only_scalars():
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (8, 2)).astype(np.float32)
    m = rng.uniform(-1, 1, (8, 2, 2)).astype(np.float32)
    n = np.arange(8, dtype=np.int32)
    args = (x, m, n, np.zeros((8, 2), np.float32))
    specs, _ = signature(program, args)
    raw = verify(frontend.build(program.source(), specs))
    assert _has_vectors(raw)
    before = _run(raw, args)
    lowered = verify(scalarize(raw))
    assert not _has_vectors(lowered)
    # `a = m[i]` stores a's 4 components; `a[0, 1] = ...` in the loop only the one it changes
    stores = [i.attrs[0].name for i in instrs(lowered.body) if i.op is Op.STORE_VAR]
    assert sorted(n for n in stores if n.startswith("a_")) == ["a_0", "a_1", "a_1", "a_2", "a_3"]
    np.testing.assert_array_equal(_run(lowered, args), before)
    compiled = np.zeros((8, 2), np.float32)
    qd.set_debug(True)  # the verifier after every pass, vector IR included (restored after)
    program(x, m, n, compiled)
    np.testing.assert_allclose(compiled, before, rtol=1e-6, atol=1e-6)
