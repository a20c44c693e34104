"""Compile errors that meet Taichi and Warp idioms (docs/coming_from_taichi_and_warp.md):
exact messages with file, line, source line, caret and the qdarray spelling to use."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd

FILE = __file__
with open(FILE) as _f:
    _LINES = _f.read().splitlines()


def where(func: str, marker: str, caret: str) -> str:
    """File, line, the stripped source line of `# marker` and a caret under `caret`."""
    (n,) = [k for k, line in enumerate(_LINES, 1) if f"# {marker}" in line]
    src = _LINES[n - 1].strip()
    return (f'  File "{FILE}", line {n}, in {func}:\n    {src}\n'
            f"    {' ' * src.index(caret)}{'^' * len(caret)}")


F32 = np.ones(3, np.float32)
COEFFS = [1.0, 2.0, 3.0]
COEFF_TUPLE = (1.0, 2.0, 3.0)


@qd.kernel
def taichi_loss(x: qd.Array[qd.float32, 1], loss: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        loss[None] += x[i] * x[i]  # marker: none 1-d


@qd.kernel
def taichi_loss_0d(x: qd.Array[qd.float32, 1], loss: qd.Array[qd.float32, 0]):
    for i in range(x.shape[0]):
        loss[None] += x[i]  # marker: none 0-d


def test_none_index_says_to_use_a_shape_1_array():
    with pytest.raises(qd.KernelTypeError) as info:
        taichi_loss(F32, np.zeros(1, np.float32))
    assert isinstance(info.value, TypeError)
    assert str(info.value) == (
        "array 'loss' is indexed with None (Taichi's spelling for a 0-d field); kernels "
        "index arrays with integers.\n"
        + where("taichi_loss", "marker: none 1-d", "None") + "\n"
        "Use a shape-(1,) array and loss[0], as for a loss that qd.ad.Tape(loss=...) takes: "
        "qd.zeros(1, dtype=qd.float32, requires_grad=True) (a 0-d array is indexed x[()]).")


def test_none_index_of_a_0d_array():
    with pytest.raises(qd.KernelTypeError) as info:
        taichi_loss_0d(F32, np.zeros((), np.float32))
    assert str(info.value).endswith(
        where("taichi_loss_0d", "marker: none 0-d", "None") + "\n"
        "Use loss[()] to read or update a 0-d array.")


@qd.kernel
def list_by_thread(x: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        x[i] = x[i] * COEFFS[i % 3]  # marker: list runtime


@qd.kernel
def list_by_constant(x: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        x[i] = x[i] * COEFFS[2]  # marker: list constant


@qd.kernel
def tuple_by_thread(x: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        x[i] = x[i] * COEFF_TUPLE[i % 3]  # marker: tuple runtime


@qd.kernel
def tuple_by_static(x: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        for k in qd.static(range(3)):
            x[i] = x[i] * COEFF_TUPLE[k]


def test_global_list_with_a_runtime_index():
    with pytest.raises(qd.KernelSyntaxError) as info:
        list_by_thread(F32.copy())
    assert str(info.value) == (
        "'COEFFS' is a Python list, indexed with a value computed when the kernel runs; "
        "kernels do not index lists.\n"
        + where("list_by_thread", "marker: list runtime", "COEFFS[i % 3]") + "\n"
        "Use an array argument (pass qd.asarray(COEFFS) and index it), or a tuple "
        "(COEFFS = (1.0, 2.0, 3.0)) indexed with a qd.static loop variable "
        "(for k in qd.static(range(3))).")


def test_global_list_with_a_constant_index():
    with pytest.raises(qd.KernelSyntaxError) as info:
        list_by_constant(F32.copy())
    assert str(info.value) == (
        "'COEFFS' is a Python list; kernels do not index lists.\n"
        + where("list_by_constant", "marker: list constant", "COEFFS[2]") + "\n"
        "Use a tuple (COEFFS = (1.0, 2.0, 3.0)): a tuple of constants is indexed with "
        "constant indices and qd.static loop variables (for k in qd.static(range(3))).")


def test_tuples_take_constant_and_static_indices_only():
    with pytest.raises(qd.KernelSyntaxError) as info:
        tuple_by_thread(F32.copy())
    assert str(info.value).endswith(
        where("tuple_by_thread", "marker: tuple runtime", "i % 3") + "\n"
        "Use qd.static(...) or a constant index (a qd.static loop variable, for k in "
        "qd.static(range(n))), or pass the values as an array argument.")
    x = F32.copy()
    tuple_by_static(x)  # what the messages point to compiles
    np.testing.assert_array_equal(x, np.full(3, 6.0, np.float32))
