"""Compile errors of vector and matrix code: what is wrong, file, line, source line, caret and
what to do instead (the frontend's format, tests/kernels/test_frontend_errors.py)."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd

FILE = __file__
with open(FILE) as _f:
    _LINES = _f.read().splitlines()

V2 = np.zeros((2, 2), np.float32)
V3 = np.zeros((2, 3), np.float32)


def location(marker: str, caret: str) -> str:
    """The line number, source line and caret of the line with `# marker: <marker>`."""
    hits = [n for n, line in enumerate(_LINES, 1) if f"# marker: {marker}" in line]
    assert len(hits) == 1, marker
    src = _LINES[hits[0] - 1].strip()
    start = src.index(caret)
    return f", line {hits[0]}, in {{func}}:\n    {src}\n    {' ' * start}{'^' * len(caret)}"


def error_of(kern, *args, kind=(qd.KernelSyntaxError, qd.KernelTypeError)):
    with pytest.raises(kind) as info:
        kern(*args)
    return str(info.value)


@qd.kernel
def add_mismatch(x: qd.Array[qd.vec3, 1], y: qd.Array[qd.vec2, 1]):
    for i in range(x.shape[0]):
        z = x[i] + y[i]  # marker: add
        y[i] = z.xy


@qd.kernel
def matmul_mismatch(x: qd.Array[qd.vec3, 1], y: qd.Array[qd.vec2, 1]):
    for i in range(x.shape[0]):
        m = qd.mat2(1.0, 0.0, 0.0, 1.0)
        y[i] = m @ x[i]  # marker: matmul


@qd.kernel
def index_out_of_range(x: qd.Array[qd.vec3, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = x[i][3]  # marker: range


@qd.kernel
def runtime_index(x: qd.Array[qd.vec3, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        k = i
        y[i] = x[i][k]  # marker: runtime


@qd.kernel
def taichi_spelling(y: qd.Array[qd.float32, 1]):
    for i in range(y.shape[0]):
        v = qd.Vector([1.0, 2.0])  # marker: taichi
        y[i] = v[0]


@qd.kernel
def wrong_count(y: qd.Array[qd.vec3, 1]):
    for i in range(y.shape[0]):
        y[i] = qd.vec3(1.0, 2.0)  # marker: count


@qd.kernel
def scalar_local_gets_vector(x: qd.Array[qd.vec2, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        t = 0.0
        t = x[i]  # marker: local
        y[i] = t


@qd.kernel
def compare_vectors(x: qd.Array[qd.vec2, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        if x[i] < x[i]:  # marker: compare
            y[i] = 1.0


@qd.kernel
def store_wrong_shape(x: qd.Array[qd.vec3, 1], y: qd.Array[qd.vec2, 1]):
    for i in range(x.shape[0]):
        y[i] = x[i]  # marker: store


@qd.kernel
def svd_of_vector(x: qd.Array[qd.vec3, 1], y: qd.Array[qd.vec3, 1]):
    for i in range(x.shape[0]):
        u, s, v = qd.math.svd(x[i])  # marker: svd
        y[i] = u


@qd.kernel
def cross_of_4(x: qd.Array[qd.vec4, 1], y: qd.Array[qd.vec4, 1]):
    for i in range(x.shape[0]):
        y[i] = qd.math.cross(x[i], x[i])  # marker: cross


CASES = [
    (add_mismatch, (V3, V2), qd.KernelTypeError,
     "The shapes of a vec3 value (3,) and a vec2 value (2,) do not match for +.",
     "add", "x[i] + y[i]", "Use operands of the same shape, or a scalar on one side."),
    (matmul_mismatch, (V3, V2), qd.KernelTypeError,
     "The shapes of a mat2 value (2, 2) and a vec3 value (3,) do not match for @ (2 columns "
     "against 3 rows).", "matmul", "m @ x[i]", "Use operands whose inner dimensions agree"),
    (index_out_of_range, (V3, np.zeros(2, np.float32)), qd.KernelSyntaxError,
     "Index 3 is out of range for a vec3 value (extent 3).", "range", "3",
     "Use an index in [0, 3)."),
    (runtime_index, (V3, np.zeros(2, np.float32)), qd.KernelSyntaxError,
     "Components of a vec3 value are indexed with integer constants; got a value computed "
     "when the kernel runs.", "runtime", "k", "qd.static(range(n))"),
    (taichi_spelling, (np.zeros(2, np.float32),), qd.KernelSyntaxError,
     "has no attribute 'Vector'.", "taichi", "qd.Vector",
     "Use qd.types.vector(n, dtype) or qd.vec2 / qd.vec3 / qd.vec4"),
    (wrong_count, (V3,), qd.KernelTypeError,
     "vec3(...) needs 3 components (or one scalar for all of them); got 2 arguments.",
     "count", "qd.vec3(1.0, 2.0)", "Use vec3(x, x, x)."),
    (scalar_local_gets_vector, (V2, np.zeros(2, np.float32)), qd.KernelTypeError,
     "Local 't' needs a scalar value; got a vec2 value.", "local", "t", ""),
    (compare_vectors, (V2, np.zeros(2, np.float32)), qd.KernelTypeError,
     "The operator < is not defined on vectors and matrices (a vec2 value, a vec2 value).",
     "compare", "x[i] < x[i]", "Compare or combine the components"),
    (store_wrong_shape, (V3, V2), qd.KernelTypeError,
     "An element of array 'y' is a vec2; got a vec3 value.", "store", "y[i]", "Use a vec2"),
    (svd_of_vector, (V3, V3), qd.KernelTypeError,
     "qd.math.svd takes a 2x2 or 3x3 matrix; got a vec3 value.", "svd",
     "qd.math.svd(x[i])", "Use a 2x2 or 3x3 matrix"),
    (cross_of_4, (np.zeros((2, 4), np.float32),) * 2, qd.KernelTypeError,
     "qd.math.cross takes a 2-vector or 3-vector; got a vec4 value.", "cross",
     "qd.math.cross(x[i], x[i])", "Use a 2-vector or 3-vector"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0].__name__ for c in CASES])
def test_compile_errors_say_what_where_and_what_to_do(case):
    kern, args, kind, what, marker, caret, hint = case
    text = error_of(kern, *args, kind=kind)
    first, rest = text.split("\n", 1)
    assert what in first, text
    where = location(marker, caret).replace("{func}", kern.__name__)
    assert f'File "{FILE}"{where}' in rest, text
    assert hint in text.splitlines()[-1] or hint in text, text
