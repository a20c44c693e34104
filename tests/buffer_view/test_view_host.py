"""Host-side BufferView: construction, validation messages, narrowing, memory sharing."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd


@pytest.fixture
def data() -> qd.Array:
    return qd.asarray(np.arange(32, dtype=np.float32))


def test_window_addresses_base_memory(data: qd.Array) -> None:
    v = qd.BufferView(data, offset=16, size=8)
    assert (v.offset, v.size, v.shape, v.ndim, len(v)) == (16, 8, (8,), 1, 8)
    assert v.dtype == qd.float32 and v.device == qd.Device("cpu")
    np.testing.assert_array_equal(np.asarray(qd.asarray(v)), np.arange(16, 24))
    qd.asarray(v)[0] = -1.0
    assert float(data[16]) == -1.0


def test_offsets_accumulate_through_slices_and_subviews(data: qd.Array) -> None:
    v = qd.BufferView(data[4:28], offset=2, size=20)      # data[6:26]
    assert v.base.shape == (32,) and v.offset == 6
    w = v[3:9]                                            # data[9:15]
    assert (w.offset, w.size) == (9, 6)
    s = w.subview(1, 4)                                   # data[10:14]
    assert (s.offset, s.size) == (10, 4)
    np.testing.assert_array_equal(np.asarray(s), np.arange(10, 14))
    assert (v[:].offset, v[:].size) == (6, 20)


def test_default_size_is_rest_of_array(data: qd.Array) -> None:
    assert qd.BufferView(data, 30).size == 2
    assert qd.BufferView(data).size == 32
    assert qd.BufferView(data, 32).size == 0
    with pytest.raises(ValueError) as info:
        qd.BufferView(data, 40)
    assert str(info.value) == ("BufferView window [40, 40) (offset=40, size=0) exceeds the "
                               "array's length 32; use offset + size <= 32.")
    with pytest.raises(ValueError, match=r"needs a 1-D array; got shape \(4, 8\)"):
        qd.BufferView(qd.reshape(data, (4, 8)))  # the shape is checked before the size


@pytest.mark.parametrize(
    ("offset", "size", "exc", "message"),
    [
        (-1, 4, ValueError, "BufferView offset must be non-negative; got offset=-1."),
        (0, -2, ValueError, "BufferView size must be non-negative; got size=-2."),
        (30, 4, ValueError,
         "BufferView window [30, 34) (offset=30, size=4) exceeds the array's length 32; "
         "use offset + size <= 32."),
        (1.5, 4, TypeError, "BufferView offset must be an integer; got float 1.5."),
        (0, True, TypeError, "BufferView size must be an integer; got bool True."),
    ],
)
def test_construction_errors(data: qd.Array, offset: object, size: object,
                             exc: type[Exception], message: str) -> None:
    with pytest.raises(exc) as info:
        qd.BufferView(data, offset, size)
    assert str(info.value) == message


def test_rejects_2d_strided_and_non_arrays(data: qd.Array) -> None:
    with pytest.raises(ValueError, match=r"needs a 1-D array; got shape \(4, 8\)"):
        qd.BufferView(qd.reshape(data, (4, 8)), 0, 4)
    with pytest.raises(ValueError, match="got a view with step 2"):
        qd.BufferView(data[::2], 0, 4)
    with pytest.raises(TypeError, match="needs a qdarray Array; got list"):
        qd.BufferView([1.0, 2.0], 0, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"use view.subview\(offset, size\)"):
        qd.BufferView(qd.BufferView(data, 0, 8), 0, 4)  # type: ignore[arg-type]


def test_subview_and_slice_errors(data: qd.Array) -> None:
    v = qd.BufferView(data, 8, 16)
    with pytest.raises(ValueError) as info:
        v.subview(10, 8)
    assert str(info.value) == (
        "subview(offset=10, size=8) exceeds its parent view of size 16 (parent offset=8); "
        "use offset + size <= 16."
    )
    with pytest.raises(ValueError, match="need step 1; got step 2"):
        v[0:8:2]
    with pytest.raises(ValueError, match=r"slice \[4:20\] exceeds the view's size 16"):
        v[4:20]
    with pytest.raises(ValueError, match="must be non-negative"):
        v[-4:]
    with pytest.raises(ValueError, match="has stop < start"):
        v[6:2]


def test_grad_window_follows_base() -> None:
    x = qd.zeros(16, dtype=qd.float32, requires_grad=True)
    v = qd.BufferView(x, 4, 8)
    assert v.grad is not None and (v.grad.offset, v.grad.size) == (4, 8)
    assert v[2:4].grad is not None and v[2:4].grad.offset == 6
    qd.asarray(v.grad)[0] = 5.0
    assert float(x.grad[4]) == 5.0
    assert qd.BufferView(qd.zeros(4), 0, 2).grad is None


def test_writes_through_view_bump_base_generation(data: qd.Array) -> None:
    before = data._buffer.generation
    v = qd.BufferView(data, 0, 4)
    v[1] = 3.0
    assert data._buffer.generation > before
    assert float(data[1]) == 3.0


def test_basic_slices_of_an_array_with_grad_carry_the_matching_grad_view() -> None:
    x = qd.zeros(16, dtype=qd.float32, requires_grad=True)
    s = x[4:12]
    assert s.grad is not None and s.grad.shape == (8,)
    s.grad[0] = 2.0
    assert float(x.grad[4]) == 2.0
    assert x[qd.asarray([1, 2])].grad is None      # integer-array indexing copies: no grad view


def test_namespace_functions_take_the_view_as_an_array(data: qd.Array) -> None:
    v = qd.BufferView(data, 4, 6)
    ref = np.arange(4.0, 10.0, dtype=np.float32)
    assert float(qd.sum(v)) == ref.sum()
    np.testing.assert_array_equal(np.asarray(qd.sin(v)), np.sin(ref))
    np.testing.assert_array_equal(np.asarray(qd.add(v, 1.0)), ref + 1)
    np.testing.assert_array_equal(np.asarray(qd.multiply(v, v)), ref * ref)
    np.testing.assert_array_equal(np.asarray(qd.concat([v, data[:2]])), np.r_[ref, 0, 1])
    np.testing.assert_array_equal(np.asarray(qd.reshape(v, (2, 3))), ref.reshape(2, 3))
    assert bool(qd.all(qd.isin(v, data)))
    window = qd.asarray(v)
    assert np.shares_memory(np.asarray(window), np.asarray(data))
    qd.reshape(v, (3, 2))[0, 0] = -1.0                # views of the window write the base
    assert float(data[4]) == -1.0
    with pytest.raises(TypeError) as info:
        qd.sum([1.0, 2.0])  # type: ignore[arg-type]
    assert str(info.value) == ("sum expects a qdarray Array for x; got list. Use "
                               "qd.asarray(...) to convert it.")
