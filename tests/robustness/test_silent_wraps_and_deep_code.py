"""No silent wraps, and kernels of any length (issue 18).

- A weak Python int out of an integer array's range raises, as NumPy 2 does
  (`int8 array + 300`); a NumPy integer given for a narrower integer parameter raises
  OverflowError instead of wrapping (np.int64(300) for qd.int8); a dataclass field declared
  int that holds 2.5 raises TypeError instead of being taken as a float.
- The frontend builds a 900-term expression, and the reverse of a kernel with 200 sequential
  dynamic loops is built and run (both raised RecursionError).

Oracles: NumPy's own errors and results, closed-form gradients."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import qdarray as qd


@qd.kernel
def fill8(x: qd.Array[qd.int8, 1], s: qd.int8):
    for i in range(x.shape[0]):
        x[i] = s


@dataclass(frozen=True)
class Steps:
    n: int
    scale: float


@qd.kernel
def scaled(x: qd.Array[qd.float64, 1], p: Steps):
    for i in range(x.shape[0]):
        x[i] = p.scale * p.n


@pytest.mark.parametrize("op", [lambda a: a + 300, lambda a: 300 + a, lambda a: a * 300])
def test_a_weak_int_outside_the_arrays_range_raises_as_in_numpy(op):
    with pytest.raises(OverflowError):
        op(np.arange(3, dtype=np.int8))  # the oracle: NumPy 2 raises too
    with pytest.raises(OverflowError, match="300"):
        op(qd.asarray(np.arange(3, dtype=np.int8)))


@pytest.mark.parametrize("value", [np.int64(300), np.int64(-129), np.uint16(128), 300])
def test_an_integer_outside_a_parameters_type_raises_overflow_error(value):
    x = np.zeros(2, np.int8)
    with pytest.raises(OverflowError, match=r"does not fit in int8 \(range \[-128, 127\]\)"):
        fill8(x, value)
    assert isinstance(qd.KernelOverflowError("m"), qd.KernelTypeError)
    np.testing.assert_array_equal(x, [0, 0])  # nothing ran


@pytest.mark.parametrize("value", [np.int64(127), np.int16(-128), np.uint8(5), 7, True])
def test_an_integer_the_parameter_holds_is_passed_exactly(value):
    x = np.zeros(2, np.int8)
    fill8(x, value)
    np.testing.assert_array_equal(x, [int(value)] * 2)


@qd.kernel
def fill32(x: qd.Array[qd.float32, 1], s: qd.float32):
    for i in range(x.shape[0]):
        x[i] = s


@pytest.mark.parametrize("value", [1e39, -np.float64(4e38), 2**200, 3.4028236e38])
def test_a_finite_float_beyond_float32_raises_overflow_error(value):
    """np.float32(1e39) is inf (with a RuntimeWarning): a float32 parameter refuses the
    value instead, as an integer parameter refuses one it cannot hold."""
    x = np.zeros(2, np.float32)
    with pytest.raises(qd.KernelOverflowError, match=r"does not fit in float32 \(largest "
                                                     r"magnitude 3.4028235e\+38\)"):
        fill32(x, value)
    np.testing.assert_array_equal(x, [0, 0])  # nothing ran


@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan, 3.4028235e38, 3.40282356e38, 1e-50,
                                   np.float32(2.5), 7])
def test_float32_parameters_take_what_float32_holds_or_rounds_to(value):
    x = np.zeros(2, np.float32)
    fill32(x, value)
    np.testing.assert_array_equal(x, [np.float32(value)] * 2)


def test_a_dataclass_field_holding_another_kind_than_declared_raises():
    x = np.zeros(2)
    with pytest.raises(TypeError, match=r"field 'n' is declared int but holds 2.5"):
        scaled(x, Steps(2.5, 1.0))
    scaled(x, Steps(3, 2))  # an int for a float field converts, as for a parameter
    np.testing.assert_array_equal(x, [6.0, 6.0])


def _module(tmp_path: Path, name: str, text: str):
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_900_term_expression_compiles(tmp_path):
    terms = " + ".join(f"x[i] * {k}.0" for k in range(900))
    mod = _module(tmp_path, "wide_expression", f'''
import qdarray as qd

@qd.kernel
def wide(x: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = {terms}
''')
    x = np.linspace(0.0, 1.0, 5)
    y = np.zeros(5)
    mod.wide(x, y)
    expected = np.zeros(5)
    for k in range(900):  # the same order of additions
        expected = expected + x * float(k)
    np.testing.assert_allclose(y, expected, rtol=1e-14)


def test_the_reverse_of_200_sequential_dynamic_loops_runs(tmp_path):
    loops = "\n".join("        for _ in range(a[i]):\n            v = v * 0.5 + 0.25"
                      for _ in range(200))
    mod = _module(tmp_path, "many_loops", f'''
import qdarray as qd

@qd.kernel
def deep(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
{loops}
        y[i] += v
''')
    x = qd.asarray(np.array([0.3, 0.7]), requires_grad=True)
    a = qd.asarray(np.array([0, 1]))
    y = qd.zeros(2, dtype=qd.float64, requires_grad=True)
    mod.deep(x, a, y)
    y.grad[...] = 1.0
    mod.deep.grad(x, a, y)
    # thread 0 runs no iteration: y = x; thread 1 halves 200 times
    np.testing.assert_array_equal(np.asarray(x.grad), [1.0, 0.5 ** 200])
    v = 0.7
    for _ in range(200):
        v = v * 0.5 + 0.25
    np.testing.assert_allclose(np.asarray(y), [0.3, v], rtol=1e-15)
