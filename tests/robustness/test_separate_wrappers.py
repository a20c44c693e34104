"""A reverse refuses an argument that views the memory of an argument with a gradient but
carries none (a separate `qd.asarray` of the same NumPy memory): its derivatives would be
dropped silently. Views of the array with the gradient carry it and are exact; separate
wrappers of disjoint parts of one memory are independent."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd


@qd.kernel
def mix(a: qd.Array[qd.float64, 1], b: qd.Array[qd.float64, 1], y: qd.Array[qd.float64, 1]):
    for i in range(a.shape[0]):
        y[i] += a[i] * a[i] * b[i]


def _reverse(how: str, a, b):  # type: ignore[no-untyped-def]
    y = qd.zeros(a.shape[0], dtype=qd.float64, requires_grad=True)
    if how == "Tape":
        with qd.ad.Tape() as tape:
            mix(a, b, y)
            loss = qd.sum(y)
        tape.backward(loss)
    else:
        mix(a, b, y)
        y.grad[...] = 1.0
        mix.grad(a, b, y)


@pytest.mark.parametrize("how", ["kernel.grad", "Tape"])
def test_a_separate_wrapper_of_memory_with_a_gradient_is_refused(how):
    memory = np.array([0.5, 1.5, 2.0, 3.0])
    w = qd.asarray(memory, requires_grad=True)
    with pytest.raises(qd.AutodiffError, match="argument 'b' views the memory of argument 'a'"):
        _reverse(how, w, qd.asarray(memory))
    assert np.all(np.asarray(w.grad) == 0)  # nothing accumulated


@pytest.mark.parametrize("how", ["kernel.grad", "Tape"])
def test_the_same_array_and_its_views_carry_the_gradient(how):
    memory = np.array([0.5, 1.5, 2.0, 3.0])
    w = qd.asarray(memory, requires_grad=True)
    _reverse(how, w, w)  # d(w^3)/dw = 3 w^2
    np.testing.assert_allclose(np.asarray(w.grad), 3 * memory**2, rtol=1e-15)
    v = qd.asarray(np.arange(1.0, 9.0), requires_grad=True)
    _reverse(how, v[::2], v[1::2])  # a = v[0::2], b = v[1::2]: disjoint views, both with grad
    a, b = np.arange(1.0, 9.0)[::2], np.arange(1.0, 9.0)[1::2]
    want = np.empty(8)
    want[::2], want[1::2] = 2 * a * b, a * a
    np.testing.assert_allclose(np.asarray(v.grad), want, rtol=1e-15)


def test_separate_wrappers_of_disjoint_parts_of_one_memory_are_independent():
    memory = np.arange(1.0, 9.0)
    w = qd.asarray(memory[:4], requires_grad=True)
    c = qd.asarray(memory[4:])  # the same NumPy memory, no element in common with w
    _reverse("kernel.grad", w, c)
    np.testing.assert_allclose(np.asarray(w.grad), 2 * memory[:4] * memory[4:], rtol=1e-15)


def test_an_integer_wrapper_of_the_memory_is_not_refused():
    memory = np.array([1.0, 2.0, 3.0, 4.0])
    w = qd.asarray(memory, requires_grad=True)
    b = qd.asarray(memory.view(np.int64))  # no derivative flows through integers

    @qd.kernel
    def scale(a: qd.Array[qd.float64, 1], k: qd.Array[qd.int64, 1], y: qd.Array[qd.float64, 1]):
        for i in range(a.shape[0]):
            y[i] += a[i] * (k[i] % 3)

    y = qd.zeros(4, dtype=qd.float64, requires_grad=True)
    scale(w, b, y)
    y.grad[...] = 1.0
    scale.grad(w, b, y)
    np.testing.assert_allclose(np.asarray(w.grad), memory.view(np.int64) % 3, rtol=0)
