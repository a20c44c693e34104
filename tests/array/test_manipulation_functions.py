"""Manipulation functions against NumPy; views share the input's buffer token."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

import qdarray as qd
from qdarray._array import Array
from qdarray._devices import Device

SHAPES = npst.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)
NONEMPTY = npst.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4)
DTYPES = st.sampled_from(["bool", "int8", "uint16", "int64", "float32", "float64", "complex64"])


def _pair(shape: tuple[int, ...], dtype: str = "float64") -> tuple[np.ndarray, qd.Array]:
    a = (np.arange(int(np.prod(shape))) % 7).astype(dtype).reshape(shape)
    return a, qd.asarray(a.copy())


def _check(result: qd.Array, expected: np.ndarray) -> None:
    assert result.shape == expected.shape
    assert result.dtype == qd.asarray(np.asarray(expected)).dtype
    np.testing.assert_array_equal(np.asarray(result), expected)


def _is_view(result: qd.Array, x: qd.Array) -> bool:
    return result._buffer is x._buffer


# -- views -----------------------------------------------------------------------------------


@given(st.data())
def test_permute_dims_and_matrix_transpose(data: st.DataObject) -> None:
    shape = data.draw(SHAPES)
    perm = data.draw(st.permutations(range(len(shape))))
    signed = tuple(p - len(shape) if data.draw(st.booleans()) else p for p in perm)
    a, x = _pair(shape)
    r = qd.permute_dims(x, signed)
    _check(r, np.transpose(a, perm))
    assert _is_view(r, x)


@given(st.data())
def test_expand_dims_with_int_and_tuple(data: st.DataObject) -> None:
    shape = data.draw(SHAPES)
    count = data.draw(st.integers(1, 3))
    m = len(shape) + count
    positions = data.draw(st.lists(st.integers(0, m - 1), min_size=count, max_size=count,
                                   unique=True))
    axes = tuple(p - m if data.draw(st.booleans()) else p for p in positions)
    a, x = _pair(shape)
    r = qd.expand_dims(x, axes)
    _check(r, np.expand_dims(a, axes))
    assert _is_view(r, x)
    if count == 1:
        _check(qd.expand_dims(x, axes[0]), np.expand_dims(a, axes[0]))


@given(st.data())
def test_squeeze_flip_moveaxis_are_views(data: st.DataObject) -> None:
    shape = data.draw(NONEMPTY)
    a, x = _pair(shape)
    ones = [i for i, n in enumerate(shape) if n == 1]
    if ones:
        axes = tuple(data.draw(st.sets(st.sampled_from(ones), min_size=1)))
        r = qd.squeeze(x, axes)
        _check(r, np.squeeze(a, axes))
        assert _is_view(r, x)
    flip_axes = data.draw(st.none() | st.integers(-len(shape), len(shape) - 1)
                          | st.sets(st.integers(0, len(shape) - 1)).map(tuple))
    r = qd.flip(x, axis=flip_axes)
    _check(r, np.flip(a, axis=flip_axes))
    assert _is_view(r, x)
    src = data.draw(st.integers(0, len(shape) - 1))
    dst = data.draw(st.integers(-len(shape), len(shape) - 1))
    r = qd.moveaxis(x, src, dst)
    _check(r, np.moveaxis(a, src, dst))
    assert _is_view(r, x)


def test_writes_through_manipulation_views_reach_the_base() -> None:
    x = qd.zeros((2, 3))
    a = np.zeros((2, 3))
    views = [qd.permute_dims(x, (1, 0)), qd.expand_dims(x, 0), qd.flip(x),
             qd.moveaxis(x, 0, 1), qd.reshape(x, (6,)), qd.squeeze(qd.expand_dims(x, 1), 1),
             qd.matrix_transpose(x), qd.unstack(x)[1]]
    numpy_views = [a.T, a[None], a[::-1, ::-1], a.T, a.reshape(6), a, a.T, a[1]]
    for i, (v, nv) in enumerate(zip(views, numpy_views, strict=True)):
        gen = x._buffer.generation
        v[(-1,) * v.ndim] = float(i + 1)
        assert x._buffer.generation == gen + 1
        nv[(-1,) * nv.ndim] = float(i + 1)
    np.testing.assert_array_equal(np.asarray(x), a)


@given(st.data())
def test_broadcast_to_and_broadcast_arrays(data: st.DataObject) -> None:
    shapes = data.draw(npst.mutually_broadcastable_shapes(num_shapes=3, max_dims=3))
    arrays = [_pair(s) for s in shapes.input_shapes]
    results = qd.broadcast_arrays(*(x for _, x in arrays))
    assert isinstance(results, tuple)
    for (_, x), r, e in zip(arrays, results, np.broadcast_arrays(*(a for a, _ in arrays)),
                            strict=True):
        _check(r, e)
        # An array already of the result's shape comes back as itself, as NumPy's does
        assert r is x if x.shape == shapes.result_shape else _is_view(r, x)
    assert qd.broadcast_shapes(*shapes.input_shapes) == shapes.result_shape
    a, x = arrays[0]
    r = qd.broadcast_to(x, shapes.result_shape)
    _check(r, np.broadcast_to(a, shapes.result_shape))
    assert _is_view(r, x)


def test_broadcast_edge_cases() -> None:
    assert qd.broadcast_arrays() == ()
    assert qd.broadcast_shapes() == ()
    assert qd.broadcast_shapes((0, 1), (3,)) == (0, 3)
    with pytest.raises(ValueError, match=r"Shapes \(2, 3\), \(4,\) cannot be broadcast"):
        qd.broadcast_shapes((2, 3), (4,))
    with pytest.raises(ValueError, match=r"shape \(2, 3\) to shape \(3, 3\)"):
        qd.broadcast_to(qd.zeros((2, 3)), (3, 3))
    with pytest.raises(ValueError, match=r"shape \(2, 3\) to shape \(3,\)"):
        qd.broadcast_to(qd.zeros((2, 3)), (3,))


# -- reshape ---------------------------------------------------------------------------------


@given(st.data())
def test_reshape_matches_numpy_and_copies_only_when_needed(data: st.DataObject) -> None:
    shape = data.draw(SHAPES)
    a, x = _pair(shape)
    if data.draw(st.booleans()) and len(shape) >= 2:
        a, x = a.T, qd.matrix_transpose(x) if len(shape) == 2 else qd.permute_dims(
            x, tuple(reversed(range(len(shape)))))
    size = a.size
    divisors = [d for d in range(1, size + 1) if size % d == 0] or [0]
    first = data.draw(st.sampled_from(divisors))
    new = (first, -1) if size else (0, 3)
    r = qd.reshape(x, new)
    _check(r, np.reshape(a, new))
    try:
        np.reshape(a, new, copy=False)
        numpy_views = True
    except ValueError:
        numpy_views = False
    assert _is_view(r, x) == numpy_views
    c = qd.reshape(x, new, copy=True)
    _check(c, np.reshape(a, new))
    assert not _is_view(c, x)
    if numpy_views:
        assert _is_view(qd.reshape(x, new, copy=False), x)
    else:
        with pytest.raises(ValueError, match="cannot view .* without copying"):
            qd.reshape(x, new, copy=False)


def test_reshape_errors() -> None:
    x = qd.zeros((2, 3))
    with pytest.raises(ValueError, match=r"size 6 \(shape \(2, 3\)\) into shape \(4,\)"):
        qd.reshape(x, (4,))
    with pytest.raises(ValueError, match="at most one -1"):
        qd.reshape(x, (-1, -1))
    with pytest.raises(ValueError, match="-1 cannot be inferred"):
        qd.reshape(x, (4, -1))
    with pytest.raises(TypeError, match="tuple of integers"):
        qd.reshape(x, (2.0, 3))
    assert qd.reshape(x, 6).shape == (6,)


# -- joining, splitting, repeating -----------------------------------------------------------


@given(st.data())
def test_concat_and_stack(data: st.DataObject) -> None:
    shape = data.draw(NONEMPTY)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    dtypes = data.draw(st.lists(DTYPES, min_size=1, max_size=3))
    pieces = []
    for dt in dtypes:
        s = list(shape)
        s[axis] = data.draw(st.integers(0, 3))
        pieces.append(_pair(tuple(s), dt))
    _check(qd.concat([x for _, x in pieces], axis=axis),
           np.concatenate([a for a, _ in pieces], axis=axis))
    _check(qd.concat(tuple(x for _, x in pieces), axis=None),
           np.concatenate([a.ravel() for a, _ in pieces]))
    same = [_pair(shape, dt) for dt in dtypes]
    new_axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    _check(qd.stack([x for _, x in same], axis=new_axis),
           np.stack([a for a, _ in same], axis=new_axis))


@given(st.data())
def test_unstack_is_the_inverse_of_stack(data: st.DataObject) -> None:
    shape = data.draw(NONEMPTY)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    a, x = _pair(shape)
    parts = qd.unstack(x, axis=axis)
    assert isinstance(parts, tuple) and len(parts) == shape[axis]
    for i, p in enumerate(parts):
        _check(p, np.take(a, i, axis=axis))
        assert _is_view(p, x)
    _check(qd.stack(list(parts), axis=axis), a)


@given(st.data())
def test_roll_tile_repeat(data: st.DataObject) -> None:
    shape = data.draw(NONEMPTY)
    a, x = _pair(shape, data.draw(DTYPES))
    shift = data.draw(st.integers(-7, 7))
    _check(qd.roll(x, shift), np.roll(a, shift))
    axes = tuple(data.draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
    shifts = tuple(data.draw(st.integers(-5, 5)) for _ in axes)
    _check(qd.roll(x, shifts, axis=axes), np.roll(a, shifts, axis=axes))
    _check(qd.roll(x, shift, axis=axes), np.roll(a, shift, axis=axes))
    reps = tuple(data.draw(st.lists(st.integers(0, 3), max_size=len(shape) + 1)))
    _check(qd.tile(x, reps), np.tile(a, reps))
    n = data.draw(st.integers(0, 3))
    _check(qd.repeat(x, n), np.repeat(a, n))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    counts = np.array(data.draw(st.lists(st.integers(0, 3), min_size=shape[axis],
                                         max_size=shape[axis])))
    _check(qd.repeat(x, qd.asarray(counts), axis=axis), np.repeat(a, counts, axis=axis))
    _check(qd.repeat(x, qd.asarray([2]), axis=axis), np.repeat(a, [2], axis=axis))


# -- errors ----------------------------------------------------------------------------------


def test_manipulation_errors_name_the_problem() -> None:
    x = qd.zeros((2, 3))
    cases = [
        (lambda: qd.permute_dims(x, (0,)), IndexError, "permutation of all 2 axes"),
        (lambda: qd.permute_dims(x, (0, 0)), IndexError, "repeated axes"),
        (lambda: qd.permute_dims(x, (0, 2)), IndexError, "axes=2 is out of range"),
        (lambda: qd.expand_dims(x, 3), IndexError, r"positions in \[-3, 3\)"),
        (lambda: qd.expand_dims(x, (0, -5)), IndexError, r"positions in \[-4, 4\)"),
        (lambda: qd.expand_dims(x, (0, -4)), IndexError, "repeated axes"),
        (lambda: qd.squeeze(x, 0), ValueError, "axis 0 of shape \\(2, 3\\) has size 2"),
        (lambda: qd.flip(x, axis=2), IndexError, "axis=2 is out of range for flip"),
        (lambda: qd.moveaxis(x, (0, 1), 0), ValueError, "as many destinations"),
        (lambda: qd.concat([x, qd.zeros((2, 2))]), ValueError, "arrays\\[1\\] has shape"),
        (lambda: qd.concat([x, qd.zeros(3)]), ValueError, "needs equal shapes"),
        (lambda: qd.concat([qd.asarray(1.0)]), ValueError, "0-D arrays"),
        (lambda: qd.concat([]), ValueError, "at least one array"),
        (lambda: qd.concat(x), TypeError, "tuple or list of arrays"),
        (lambda: qd.stack([x, qd.zeros(3)]), ValueError, "arrays of one shape"),
        (lambda: qd.stack([x, np.zeros((2, 3))]), TypeError, "arrays\\[1\\]"),
        (lambda: qd.unstack(qd.asarray(1.0)), ValueError, "at least 1 dimension"),
        (lambda: qd.roll(x, (1, 2), axis=0), ValueError, "one shift per axis"),
        (lambda: qd.roll(x, (1, 2)), ValueError, "one integer shift"),
        (lambda: qd.repeat(x, -1), ValueError, "non-negative repeats; got -1"),
        (lambda: qd.repeat(x, qd.asarray([1, -2]), axis=0), ValueError, "got -2"),
        (lambda: qd.repeat(x, qd.asarray([1, 2]), axis=1), ValueError, r"shape \(1,\) or \(3,\)"),
        (lambda: qd.repeat(x, qd.asarray([1.0])), TypeError, "Only integer dtypes"),
        (lambda: qd.tile(x, (-1,)), ValueError, "non-negative repetitions"),
        (lambda: qd.reshape([1, 2], (2,)), TypeError, "Use qd.asarray"),
    ]
    for func, exc, match in cases:
        with pytest.raises(exc, match=match):
            func()


def test_device_mismatch_names_both_devices() -> None:
    other = Array._new(np.zeros((2, 3)), Device("cuda:1"))
    with pytest.raises(ValueError, match="arrays\\[0\\] on cpu and arrays\\[1\\] on cuda:1"):
        qd.concat([qd.zeros((2, 3)), other])
    with pytest.raises(ValueError, match="cpu and arrays\\[1\\] on cuda:1"):
        qd.broadcast_arrays(qd.zeros(3), other)


@pytest.mark.parametrize("axis", [None, 0])
def test_repeat_beyond_the_largest_array_gives_the_numbers(axis: int | None) -> None:
    # NumPy's own size computation overflows and says "negative dimensions are not allowed"
    with pytest.raises(ValueError, match=re.escape(
            "repeat's result would have 2 x 4611686018427387904 = 9223372036854775808 elements "
            "of 8 bytes (73786976294838206464 bytes), more than the largest array "
            "(9223372036854775807 bytes). Use fewer repeats.")):
        qd.repeat(qd.asarray(np.array([1, 2], np.int64)), 2**62, axis=axis)
