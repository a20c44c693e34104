"""x[key], x[key] = value, take and take_along_axis against NumPy, views and generations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import qdarray as qd
from qdarray._array import Array
from qdarray._devices import Device

SHAPES = npst.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)
NONEMPTY = npst.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5)


def _pair(shape: tuple[int, ...], dtype: str = "float64") -> tuple[np.ndarray, qd.Array]:
    a = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
    return a, qd.asarray(a.copy())


def _check(result: qd.Array, expected: np.ndarray) -> None:
    assert result.shape == expected.shape
    assert result.dtype == qd.asarray(np.asarray(expected)).dtype
    np.testing.assert_array_equal(np.asarray(result), expected)


def _on_other_device(a: np.ndarray) -> qd.Array:
    # An Array labelled with another device; the device check must fire before any data use.
    return Array._new(a, Device("cuda:1"))


# -- basic indexing: views ------------------------------------------------------------------


@given(st.data())
def test_basic_indexing_matches_numpy_and_is_a_view(data: st.DataObject) -> None:
    shape = data.draw(SHAPES)
    key = data.draw(npst.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    a, x = _pair(shape)
    result = x[key]
    _check(result, a[key])
    assert result._buffer is x._buffer
    assert np.shares_memory(np.asarray(result), np.asarray(x)) or result.size == 0


@given(st.data())
def test_writes_through_views_reach_the_base_and_bump_its_generation(
        data: st.DataObject) -> None:
    shape = data.draw(NONEMPTY)
    key = data.draw(npst.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    a, x = _pair(shape)
    view = x[key]
    before = x._buffer.generation
    view[...] = -1.0
    assert x._buffer.generation == before + 1
    a[key] = -1.0
    np.testing.assert_array_equal(np.asarray(x), a)


def test_view_of_a_view_shares_the_token_and_reads_are_not_writes() -> None:
    x = qd.zeros((4, 6))
    v = x[1:3][:, ::2]
    assert v._buffer is x._buffer
    gen = x._buffer.generation
    _ = x[0], x[1:], x[..., None]
    assert x._buffer.generation == gen
    v[0, 1] = 5.0
    assert float(x[1, 2]) == 5.0
    assert x._buffer.generation == gen + 1


def test_integer_index_of_1d_array_is_a_0d_view() -> None:
    x = qd.asarray([1.0, 2.0, 3.0])
    e = x[1]
    assert e.shape == () and e._buffer is x._buffer
    e[()] = 9.0
    assert np.asarray(x).tolist() == [1.0, 9.0, 3.0]


def test_zero_d_integer_arrays_index_like_ints() -> None:
    a, x = _pair((3, 4))
    i = qd.asarray(2)
    j = qd.asarray(-1, dtype=qd.int8)
    _check(x[i], a[2])
    _check(x[i, j], a[2, -1])
    _check(x[1:, j], a[1:, -1])
    assert x[i]._buffer is x._buffer
    x[i, j] = 100.0
    assert float(x[2, 3]) == 100.0


def test_negative_steps_and_empty_slices() -> None:
    a, x = _pair((5, 3))
    _check(x[::-2], a[::-2])
    _check(x[4:1:-1, ::-1], a[4:1:-1, ::-1])
    _check(x[3:1], a[3:1])
    _check(x[10:], a[10:])
    _check(x[qd.asarray(1):qd.asarray(4)], a[1:4])


# -- advanced indexing: copies --------------------------------------------------------------


@given(st.data())
def test_integer_array_indexing_matches_numpy(data: st.DataObject) -> None:
    shape = data.draw(NONEMPTY)
    key = data.draw(npst.integer_array_indices(shape, result_shape=npst.array_shapes(
        min_dims=0, max_dims=2, max_side=3)))
    a, x = _pair(shape)
    result = x[tuple(qd.asarray(k) for k in key)]
    _check(result, a[key])
    # 0-D index arrays are ints (the standard), so they select views; others select copies.
    assert (result._buffer is x._buffer) == all(k.ndim == 0 for k in key)


@given(st.data())
def test_boolean_mask_indexing_matches_numpy(data: st.DataObject) -> None:
    shape = data.draw(SHAPES)
    k = data.draw(st.integers(0, len(shape)))
    mask = data.draw(npst.arrays(np.bool_, shape[:k]))
    a, x = _pair(shape)
    result = x[qd.asarray(mask)]
    _check(result, a[mask])
    if k < len(shape):
        _check(x[qd.asarray(mask), ...], a[mask, ...])


def test_mixed_slices_and_integer_arrays_follow_numpy() -> None:
    a, x = _pair((3, 4, 5))
    i = np.array([[0, 2], [1, 1]])
    _check(x[qd.asarray(i), 1:3], a[i, 1:3])
    _check(x[:, qd.asarray([3, 0]), qd.asarray([4, 1])], a[:, [3, 0], [4, 1]])
    _check(x[0, :, qd.asarray([1, 2])], a[0, :, [1, 2]])
    _check(x[None, qd.asarray([True, False, True])], a[None, [True, False, True]])


def test_masks_with_zero_size_axes_select_nothing() -> None:
    a, x = _pair((2, 3))
    _check(x[qd.zeros((2, 0), dtype=qd.bool)], a[np.zeros((2, 0), bool)])
    _check(x[qd.zeros((0,), dtype=qd.bool), 1:], a[np.zeros((0,), bool), 1:])


def test_python_lists_and_scalar_booleans_follow_numpy() -> None:
    a, x = _pair((3, 4))
    _check(x[[2, 0]], a[[2, 0]])
    _check(x[[True, False, True]], a[[True, False, True]])
    _check(x[[]], a[[]])
    _check(x[True], a[True])
    _check(x[..., False], a[..., False])
    _check(x[qd.asarray(True)], a[np.asarray(True)])


# -- setitem ---------------------------------------------------------------------------------


def _broadcasting_to(data: st.DataObject, target: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to `target`: a suffix of it with some sizes replaced by 1."""
    k = data.draw(st.integers(0, len(target)))
    return tuple(data.draw(st.sampled_from([1, n])) for n in target[k:])


@given(st.data())
def test_setitem_basic_matches_numpy(data: st.DataObject) -> None:
    shape = data.draw(NONEMPTY)
    key = data.draw(npst.basic_indices(shape, allow_newaxis=True, allow_ellipsis=True))
    a, x = _pair(shape)
    target_shape = a[key].shape
    value = data.draw(npst.arrays(np.float64, _broadcasting_to(data, target_shape),
                                  elements=st.floats(-10, 10)))
    gen = x._buffer.generation
    x[key] = qd.asarray(value)
    assert x._buffer.generation == gen + 1
    a[key] = value
    np.testing.assert_array_equal(np.asarray(x), a)


@given(st.data())
def test_setitem_with_index_arrays_matches_numpy(data: st.DataObject) -> None:
    shape = data.draw(NONEMPTY)
    a, x = _pair(shape, "int32")
    if data.draw(st.booleans()):
        key = data.draw(npst.integer_array_indices(shape))
        qkey: object = tuple(qd.asarray(k) for k in key)
    else:
        key = data.draw(npst.arrays(np.bool_, shape))
        qkey = qd.asarray(key)
    value = data.draw(st.integers(-100, 100))
    x[qkey] = value
    a[key] = value
    np.testing.assert_array_equal(np.asarray(x), a)


@pytest.mark.parametrize(("dtype", "value", "expected"), [
    (qd.float32, 1, 1.0),
    (qd.float32, True, 1.0),
    (qd.int8, -128, -128),
    (qd.uint8, 255, 255),
    (qd.complex64, 2.5, 2.5),
    (qd.bool, False, False),
    (qd.int64, np.int16(7), 7),
])
def test_setitem_accepts_same_kind_scalars(dtype: qd.DType, value: object,
                                           expected: object) -> None:
    x = qd.ones(3, dtype=dtype)
    x[1] = value
    assert np.asarray(x)[1] == expected
    assert x.dtype == dtype


def test_setitem_accepts_same_kind_arrays() -> None:
    x = qd.zeros(3, dtype=qd.float32)
    x[:] = qd.asarray([1.5, 2.5, 3.5], dtype=qd.float64)
    x[0] = qd.asarray(True)
    assert np.asarray(x).tolist() == [1.0, 2.5, 3.5]
    i = qd.zeros(2, dtype=qd.int8)
    i[:] = qd.asarray([-5, 100], dtype=qd.int64)
    assert np.asarray(i).tolist() == [-5, 100]


@pytest.mark.parametrize(("dtype", "value", "match"), [
    (qd.int32, 1.5, "Python float .* dtype qdarray.int32"),
    (qd.float64, 1j, "Python complex"),
    (qd.bool, 1, "Python int"),
    (qd.int32, qd.asarray([1.0]), "dtype qdarray.float64 into an array of dtype qdarray.int32"),
    (qd.float64, qd.asarray([1j]), "complex128"),
    (qd.int32, "3", "got str"),
    (qd.int32, [1.5, 2, 3], "dtype qdarray.float64 into an array of dtype qdarray.int32"),
    (qd.int32, np.ones(3), "dtype qdarray.float64 into an array of dtype qdarray.int32"),
])
def test_setitem_rejects_other_kinds(dtype: qd.DType, value: object, match: str) -> None:
    x = qd.zeros(3, dtype=dtype)
    gen = x._buffer.generation
    with pytest.raises(TypeError, match=match):
        x[:] = value
    assert x._buffer.generation == gen


def test_setitem_takes_numpy_arrays_and_lists_on_the_cpu() -> None:
    """As the operators do (and NumPy, CuPy): `x[key] = ndarray` uses the NumPy array
    without a copy, a list is converted, with x[key] = Array's casting and range rules (on
    other devices both are copied there: tests/array/test_numpy_protocols.py)."""
    a = np.arange(12.0).reshape(3, 4)
    x = qd.asarray(a.copy())
    value = np.array([10.0, 20.0, 30.0, 40.0])
    x[1] = value
    a[1] = value
    x[:, ::2] = [[-1.0], [-2.0], [-3.0]]
    a[:, ::2] = [[-1.0], [-2.0], [-3.0]]
    x[qd.asarray([0, 2]), 1] = np.array([7, 8], dtype=np.int16)
    a[[0, 2], 1] = [7, 8]
    np.testing.assert_array_equal(np.asarray(x), a)
    x[...] = x.T.T[::-1].__array__()  # an ndarray over x's own memory: NumPy's result
    np.testing.assert_array_equal(np.asarray(x), a[::-1])
    with pytest.raises(OverflowError, match="300"):
        qd.zeros(2, dtype=qd.int8)[:] = np.array([1, 300])


def test_setitem_never_truncates_integers() -> None:
    x = qd.zeros(3, dtype=qd.int8)
    with pytest.raises(OverflowError, match="300 is out of range for dtype qdarray.int8"):
        x[0] = 300
    with pytest.raises(OverflowError, match="Value 300 .*int64.* nothing was written"):
        x[:] = qd.asarray([1, 2, 300])
    with pytest.raises(OverflowError, match=r"Value 200 \(dtype qdarray.uint8\) .*int8"):
        x[1:] = qd.asarray([3, 200], dtype=qd.uint8)
    with pytest.raises(TypeError, match=r"int64 into an array of dtype qdarray.uint8"):
        qd.zeros(2, dtype=qd.uint8)[:] = qd.asarray([1, 3])
    assert np.asarray(x).tolist() == [0, 0, 0]


def test_setitem_shape_and_read_only_errors() -> None:
    x = qd.zeros((2, 3))
    with pytest.raises(ValueError, match=r"shape \(2,\) to x\[key\] of shape \(3,\)"):
        x[0] = qd.zeros(2)
    b = qd.broadcast_to(qd.zeros(3), (2, 3))
    with pytest.raises(ValueError, match="read-only.*copy=True"):
        b[0, 0] = 1.0


def test_setitem_with_overlapping_source_and_duplicates() -> None:
    a, x = _pair((6,))
    x[1:] = x[:-1]
    a[1:] = a[:-1].copy()
    np.testing.assert_array_equal(np.asarray(x), a)
    x[qd.asarray([0, 0])] = qd.asarray([7.0, 8.0])
    assert float(x[0]) == 8.0


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "match"), [
    (5, r"index 5 is out of bounds for axis 0 with size 3; use an index in \[-3, 3\)"),
    ((0, -5), "index -5 is out of bounds for axis 1 with size 4"),
    ((Ellipsis, 4), "index 4 is out of bounds for axis 1 with size 4"),
    ((None, 1, None, 7), "index 7 is out of bounds for axis 1 with size 4"),
    ((slice(None), qd.asarray([0, 4])), "index 4 is out of bounds for axis 1 with size 4"),
    ((qd.asarray([-4]),), "index -4 is out of bounds for axis 0 with size 3"),
    ((qd.asarray([True, False]),), r"shape \(2,\) does not match .* \(3,\) \(axis 0"),
    ((0, qd.asarray([True, False])), r"\(2,\) does not match .* \(4,\) \(axis 1"),
    ((0, 0, 0), "Too many indices for an array of shape \\(3, 4\\): the key indexes 3"),
    ((Ellipsis, 0, Ellipsis), "only one ellipsis"),
    (1.5, "got float 1.5"),
    ((qd.asarray([0.0]),), "integer or boolean dtype; got qdarray.float64"),
    (slice(0.5, 2), "Slice start must be an integer"),
    ("a", "got str"),
    ([0.5], "must hold integers or booleans"),
])
def test_getitem_errors_name_the_problem(key: object, match: str) -> None:
    x = qd.zeros((3, 4))
    with pytest.raises(IndexError, match=match):
        x[key]
    with pytest.raises(IndexError, match=match):
        x[key] = 0.0


def test_zero_step_and_device_mismatch() -> None:
    x = qd.zeros(4)
    with pytest.raises(ValueError, match="step cannot be zero"):
        x[::0]
    with pytest.raises(ValueError, match="two devices, cpu and cuda:1"):
        x[_on_other_device(np.array([0]))]
    with pytest.raises(ValueError, match="two devices, cpu and cuda:1"):
        x[0] = _on_other_device(np.array(1.0))


# -- take / take_along_axis ------------------------------------------------------------------


@given(st.data())
def test_take_matches_numpy(data: st.DataObject) -> None:
    shape = data.draw(NONEMPTY)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    idx = data.draw(npst.arrays(np.int64, st.integers(0, 4), elements=st.integers(-n, n - 1)))
    a, x = _pair(shape)
    _check(qd.take(x, qd.asarray(idx), axis=axis), np.take(a, idx, axis=axis))
    if len(shape) == 1:
        _check(qd.take(x, qd.asarray(idx)), np.take(a, idx))


@given(st.data())
def test_take_along_axis_matches_numpy(data: st.DataObject) -> None:
    shape = data.draw(NONEMPTY)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    a = data.draw(npst.arrays(np.float32, shape, elements=st.floats(-5, 5, width=32)))
    order = np.argsort(a, axis=axis, kind="stable")
    result = qd.take_along_axis(qd.asarray(a), qd.asarray(order), axis=axis)
    _check(result, np.take_along_axis(a, order, axis=axis))


def test_take_errors() -> None:
    x = qd.zeros((2, 3))
    with pytest.raises(ValueError, match="take needs axis= for an array of 2 dimensions"):
        qd.take(x, qd.asarray([0]))
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 1 with size 3"):
        qd.take(x, qd.asarray([0, 3]), axis=1)
    with pytest.raises(TypeError, match="Only integer dtypes are allowed in take"):
        qd.take(x, qd.asarray([0.0]), axis=0)
    with pytest.raises(ValueError, match="1-D indices"):
        qd.take(x, qd.asarray([[0]]), axis=0)
    with pytest.raises(IndexError, match="axis=2 is out of range for take"):
        qd.take(x, qd.asarray([0]), axis=2)
    with pytest.raises(ValueError, match="as many dimensions as x"):
        qd.take_along_axis(x, qd.asarray([0]), axis=0)
    with pytest.raises(IndexError, match="index -3 is out of bounds for axis 0 with size 2"):
        qd.take_along_axis(x, qd.asarray([[-3, 0, 0]]), axis=0)
    with pytest.raises(ValueError, match="cannot broadcast indices of shape"):
        qd.take_along_axis(x, qd.zeros((1, 2), dtype=qd.int64), axis=0)
