"""NumPy's protocols on Array: the table from NumPy to the namespace, the CPU fallback, NumPy
operands, NumPy's methods, and the errors on other devices."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import qdarray as qd
from qdarray._numpy.functions import FUNCTIONS, LIKE_FUNCTIONS, UFUNC_METHODS, UFUNCS

OPENCL = next((str(d) for d in qd.__array_namespace_info__().devices() if d.kind == "opencl"),
              None)
needs_opencl = pytest.mark.skipif(OPENCL is None,
                                  reason="no OpenCL device (pip install 'qdarray[pocl]')")


def check(result: Any, expected: Any) -> None:
    expected = np.asarray(expected)
    assert type(result) is qd.Array
    assert result.shape == expected.shape
    assert result.dtype == expected.dtype
    np.testing.assert_allclose(np.asarray(result.to_device("cpu")), expected, rtol=1e-12)


# -- the table ---------------------------------------------------------------------------------


@pytest.mark.parametrize("func", list(FUNCTIONS), ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_adapter_takes_the_numpy_signature(func: Any) -> None:
    """Every call NumPy accepts binds to the adapter: same names, kinds and defaults."""
    ours = inspect.signature(FUNCTIONS[func]).parameters
    theirs = inspect.signature(func).parameters
    assert [(p.name, p.kind) for p in ours.values()] == [
        (p.name, p.kind) for p in theirs.values()]
    for name, p in theirs.items():
        default = ours[name].default
        assert default is p.default or default == p.default, name


@pytest.mark.parametrize("func", list(LIKE_FUNCTIONS), ids=lambda f: f.__name__)
def test_like_adapter_takes_the_numpy_signature(func: Any) -> None:
    """The device of `like=` first, then NumPy's parameters but `like` (NumPy drops it)."""
    ours = list(inspect.signature(LIKE_FUNCTIONS[func]).parameters.values())[1:]
    theirs = [p for p in inspect.signature(func).parameters.values() if p.name != "like"]
    assert [(p.name, p.kind, p.default) for p in ours] == [
        (p.name, p.kind, p.default) for p in theirs]


@pytest.mark.parametrize("device", ["cpu", *([OPENCL] if OPENCL else [])])
def test_creation_functions_given_like_create_on_its_device(device: str) -> None:
    like = qd.ones(1, device=device)
    for result, expected in [(np.asarray([1, 2], like=like), np.asarray([1, 2])),
                             (np.zeros((2, 3), like=like), np.zeros((2, 3))),
                             (np.full(2, 1.5, dtype=np.float32, like=like),
                              np.full(2, 1.5, dtype=np.float32)),
                             (np.arange(1, 7, 2, like=like), np.arange(1, 7, 2)),
                             (np.eye(3, k=1, like=like), np.eye(3, k=1)),
                             (np.array([1.0], like=like), np.array([1.0])),
                             (np.identity(2, like=like), np.identity(2))]:
        assert result.device == device
        check(result, expected)


def test_ufunc_table_names_numpy_ufuncs_and_namespace_functions() -> None:
    for name, func in UFUNCS.items():
        assert isinstance(getattr(np, name), np.ufunc), name
        assert getattr(qd, func.__name__) is func, name
    for name, method in UFUNC_METHODS:
        assert isinstance(getattr(np, name), np.ufunc) and method in ("reduce", "accumulate")


def test_numpy_functions_and_ufuncs_return_arrays_on_the_cpu() -> None:
    a = np.array([[1.0, -2.0], [3.0, 0.5]])
    x = qd.asarray(a)
    check(np.sin(x), np.sin(a))
    check(np.add.reduce(x), np.add.reduce(a))
    check(np.maximum.reduce(x, axis=1), np.maximum.reduce(a, axis=1))
    check(np.multiply.accumulate(x, axis=1), np.multiply.accumulate(a, axis=1))
    check(np.logical_or.reduce(x > 0, axis=None), np.logical_or.reduce(a > 0, axis=None))
    check(np.float32(2) * x, np.float32(2) * a)
    check(np.mean(x, axis=0, dtype=np.float32), np.mean(a, axis=0, dtype=np.float32))
    check(np.std(x, correction=1), np.std(a, correction=1))
    with pytest.raises(ValueError, match="ddof and correction"):
        np.std(x, ddof=1, correction=1)


def test_ufunc_out_writes_through_the_namespace() -> None:
    x = qd.asarray([1.0, 2.0])
    out = qd.zeros(2)
    result = np.add(x, 1.0, out=out)
    assert result is out
    check(out, [2.0, 3.0])
    n = np.zeros(2)
    assert np.multiply(x, 2.0, out=n) is n  # a NumPy out= stays NumPy's (the fallback)
    np.testing.assert_array_equal(n, [2.0, 4.0])


# -- the fallback: NumPy on the CPU storage ---------------------------------------------------


def test_fallback_views_share_memory_and_write_generation() -> None:
    x = qd.asarray(np.arange(6.0).reshape(2, 3))
    flipped = np.flipud(x)  # not in the table
    assert type(flipped) is qd.Array
    assert np.shares_memory(np.asarray(flipped), np.asarray(x))
    assert flipped._buffer is x._buffer
    before = x._buffer.generation
    np.copyto(x, 7.0)  # NumPy writes into x's storage
    assert x._buffer.generation > before
    check(x, np.full((2, 3), 7.0))


def test_fallback_wraps_tuples_named_tuples_and_scalars() -> None:
    a = np.array([3.0, 1.0, 2.0, 2.0])
    x = qd.asarray(a)
    counts, edges = np.histogram(x, bins=2)
    check(counts, np.histogram(a, bins=2)[0])
    check(edges, np.histogram(a, bins=2)[1])
    check(np.median(x), np.median(a))
    assert np.isscalar(np.ndim(x)) and np.ndim(x) == 1
    # A dtype qdarray lacks stays NumPy's own result
    half = np.asarray(x).astype(np.float16)
    assert type(np.add(x, half)) is qd.Array  # float16 + float64 -> float64
    assert type(np.float_power(x, 2.0)) is qd.Array


def test_other_array_types_keep_their_protocol() -> None:
    class Other:
        def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
            return "Other's"

    assert np.concatenate([qd.ones(2), Other()]) == "Other's"  # type: ignore[comparison-overlap]


def test_numpy_asarray_is_zero_copy_on_the_cpu() -> None:
    x = qd.zeros(3)
    assert np.shares_memory(np.asarray(x), np.asarray(x))
    assert np.asarray(x) is x._data


# -- NumPy's methods ---------------------------------------------------------------------------


def test_methods_with_numpy_argument_forms() -> None:
    a = np.arange(6.0).reshape(2, 3)
    x = qd.asarray(a)
    check(x.reshape(3, 2), a.reshape(3, 2))
    check(x.reshape((3, 2)), a.reshape((3, 2)))
    check(x.reshape(-1), a.reshape(-1))
    check(x.transpose(), a.transpose())
    check(x.transpose(1, 0), a.transpose(1, 0))
    check(x.transpose((1, 0)), a.transpose((1, 0)))
    check(x.sum(0), a.sum(0))
    check(x.std(None, None, None, 1), a.std(None, None, None, 1))
    check(x.clip(min=1.0), a.clip(min=1.0))
    check(x.clip(1.0, 4.0), a.clip(1.0, 4.0))
    assert x.item(4) == a.item(4) and x.item(1, 2) == a.item(1, 2)
    assert x[0, 1].item() == 1.0 and type(x[0, 1].item()) is float
    with pytest.raises(ValueError, match="size 1"):
        x.item()


def test_methods_that_write_in_place() -> None:
    a = np.array([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]])
    x = qd.asarray(a.copy())
    assert x.sort() is None
    a.sort()
    check(x, a)
    x.fill(2.5)
    check(x, np.full((2, 3), 2.5))


def test_copies_and_views() -> None:
    x = qd.asarray([1.0, 2.0, 3.0])
    flat = x.flatten()
    flat[0] = 9.0
    assert float(x[0]) == 1.0
    view = x.view()
    view[0] = 9.0
    assert float(x[0]) == 9.0 and view._buffer is x._buffer
    bits = qd.asarray([1.0], dtype=qd.float32).view(qd.uint32)
    assert int(bits[0]) == 0x3F800000
    with pytest.raises(ValueError, match="same size"):
        x.view(qd.float32)
    with pytest.raises(TypeError, match="according to the rule 'safe'"):
        x.astype(np.int32, casting="safe")
    check(x.astype(np.float32, casting="same_kind"), np.array([9.0, 2.0, 3.0], np.float32))
    assert x.itemsize == 8 and x.nbytes == 24


def test_dtypes_compare_with_numpy_dtypes() -> None:
    assert qd.float32 == np.float32 and np.dtype("float32") == qd.float32
    assert qd.float64 != np.float32 and qd.int64 == np.dtype("int64")
    assert np.dtype(qd.complex64) == np.complex64
    assert np.zeros(2, dtype=qd.asarray([1]).dtype).dtype == np.int64


def test_dtypes_compare_with_names_and_python_types_as_numpys_do() -> None:
    """`x.dtype == "float32"`: NumPy's dtypes compare equal to their names and codes
    (qdarray's compared unequal, so `if x.dtype == "float32":` took the other branch
    silently); the hash is the name's, so `{qd.float32: v}["float32"]` works."""
    x = qd.ones(2, dtype=qd.float32)
    assert x.dtype == "float32" and x.dtype == "f4" and not x.dtype != "float32"
    assert x.dtype != "float64" and x.dtype != "no such dtype" and x.dtype != None  # noqa: E711
    # strings NumPy's dtype() raises ValueError or SyntaxError on (the conformance suite's
    # reporting compares dtypes with test ids): unequal, never an exception
    for text in ("tests/a.py::test_sort: x, y", "[(", "(2,)f4", "i4,i4", ""):
        assert x.dtype != text and not x.dtype == text
    assert qd.int64 != int  # noqa: E721 - unlike NumPy: `int` is the weak kernel type
    assert {qd.float32: 1}["float32"] == 1
    for name, dtype in qd.__array_namespace_info__().dtypes().items():
        assert (dtype == name) is (np.dtype(name) == name) is True


def test_zero_d_arrays_take_format_specs() -> None:
    """`f"{loss:.4f}"` of a 0-D result, as of a 0-D ndarray (a TypeError before)."""
    assert f"{qd.sum(qd.asarray([1.25, 2.0])):.2f}" == "3.25"
    assert f"{qd.asarray(7):>4d}" == "   7" and f"{qd.asarray(True)}" == "True"
    assert format(qd.asarray(1 + 2j), ".1f") == format(np.asarray(1 + 2j), ".1f")
    assert format(qd.asarray([1.0, 2.0]), "") == str(np.asarray([1.0, 2.0]))
    with pytest.raises(TypeError, match="unsupported format string"):
        format(qd.asarray([1.0, 2.0]), ".2f")


# -- other devices -----------------------------------------------------------------------------


@needs_opencl
def test_mapped_functions_run_on_the_arrays_device() -> None:
    a = np.array([[1.0, -2.0], [3.0, 0.5]])
    x = qd.asarray(a, device=OPENCL)
    for result, expected in [(np.sin(x), np.sin(a)), (np.mean(x, axis=0), np.mean(a, axis=0)),
                             (x.sum(), a.sum()), (np.concatenate([x, x]), np.concatenate([a, a])),
                             (np.float64(2) * x, 2 * a), (np.add.reduce(x), a.sum(axis=0))]:
        assert result.device == OPENCL
        check(result, expected)


@needs_opencl
def test_numpy_data_beside_device_arrays_is_copied_to_the_device() -> None:
    # The host-export rule (docs/numpy.md): np.asarray(x) copies to the host, so NumPy data
    # joins device arrays by the same copy the other way; the result stays on the device.
    x = qd.asarray([1.0, 2.0, 3.0], device=OPENCL)
    for result, expected in [(x + np.ones(3), [2.0, 3.0, 4.0]), (np.ones(3) + x, [2.0, 3.0, 4.0]),
                             (x * [1.0, 2.0, 3.0], [1.0, 4.0, 9.0]),
                             (x == np.asarray([1.0, 0.0, 3.0]), [True, False, True]),
                             (np.concatenate([x, np.ones(2)]), [1.0, 2.0, 3.0, 1.0, 1.0])]:
        assert result.device == OPENCL
        check(result, expected)
    x[:2] = np.array([5.0, 6.0])
    x[2:] = [7.0]
    check(x, [5.0, 6.0, 7.0])
    x += np.ones(3)
    check(x, [6.0, 7.0, 8.0])


@needs_opencl
def test_views_on_device_arrays() -> None:
    x = qd.asarray([1.0, 2.0], device=OPENCL)
    view = x.view()
    view[0] = 5.0
    check(x, [5.0, 2.0])
    with pytest.raises(TypeError, match="reinterprets memory of CPU arrays only"):
        x.view(qd.int64)


@needs_opencl
def test_unmapped_functions_on_device_arrays_run_on_host_copies() -> None:
    a = np.array([3.0, 1.0, 2.0])
    x = qd.asarray(a, device=OPENCL)
    for result, expected in [(np.median(x), np.median(a)), (np.sum(x, initial=1.0), 7.0),
                             (np.maximum.accumulate(x), np.maximum.accumulate(a)),
                             (np.average(x, weights=x), np.average(a, weights=a)),
                             (np.average(a, weights=x), np.average(a, weights=a)),
                             (np.percentile(x, [10, 90]), np.percentile(a, [10, 90])),
                             (np.flipud(x), a[::-1])]:
        assert result.device == OPENCL  # the results come back to the arrays' device
        check(result, expected)
    counts, edges = np.histogram(x, bins=2)
    assert counts.device == edges.device == OPENCL
    assert np.atleast_1d(x) is x  # an argument returned as it came is that argument
    # What NumPy writes into an argument is written back to its device
    out = qd.zeros(3, device=OPENCL)
    np.copyto(out, a)
    check(out, a)
    np.put(out, [0], [9.0])
    check(out, [9.0, 1.0, 2.0])
    # Memory questions are answered from the arrays' buffers, not from host copies
    assert np.may_share_memory(x, x) and np.may_share_memory(x, x[1:])
    assert not np.may_share_memory(x, qd.asarray(x, copy=True))
    assert np.shares_memory(x[:2], x) and not np.shares_memory(x, out)


def test_ufunc_dtype_computes_in_that_dtype_with_numpys_casting_rule() -> None:
    check(np.add(qd.asarray([1, 2]), 1, dtype=np.float32), np.add([1, 2], 1, dtype=np.float32))
    check(np.multiply(qd.asarray([1.5]), 2.0, dtype=np.float32), np.float32([3.0]))
    check(np.less(qd.asarray([1.5, 3.0]), 2, dtype=bool), [True, False])  # dtype of the output
    with pytest.raises(TypeError, match=r"Cannot cast ufunc 'add' input 0 from "
                                        r"dtype\('float64'\) to dtype\('int32'\) with casting "
                                        "rule 'same_kind'"):
        np.add(qd.asarray([1.5]), 1, dtype=np.int32)


def test_take_without_axis_flattens_as_numpy() -> None:
    """np.take(x, idx) of an N-D array indexes the flattened array (axis=None is NumPy's
    default); the namespace's take needs an axis above 1-D, and the adapter raised its
    ValueError. Scalar and N-D indices and x.take follow NumPy too."""
    a = np.arange(12.0).reshape(3, 4)
    x = qd.asarray(a)
    check(np.take(x, [1, 5, -1]), np.take(a, [1, 5, -1]))
    check(np.take(x, qd.asarray([[0, 11], [3, 4]])), np.take(a, [[0, 11], [3, 4]]))
    check(np.take(x, 7), np.take(a, 7))
    check(np.take(x, [2, 0], axis=1), np.take(a, [2, 0], axis=1))
    check(x.take([1, 5]), a.take([1, 5]))
    check(x.take([0], axis=0), a.take([0], axis=0))
    with pytest.raises(IndexError, match="index 12 is out of bounds"):
        np.take(x, [12])
