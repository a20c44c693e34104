"""BufferView kernel arguments: slices and views passed without copies, kernel-side subviews
and slices, views in funcs, annotations, compile errors. NumPy computes the expected data."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import qdarray as qd


def host(x: qd.Array) -> np.ndarray:
    return np.asarray(x)


def arange32(n: int = 32) -> qd.Array:
    return qd.asarray(np.arange(n, dtype=np.float32))


@qd.kernel
def scale(v: qd.BufferView[qd.float32], factor: qd.float32):
    for i in range(v.size):
        v[i] = v[i] * factor


@qd.kernel
def scale_any(v: qd.BufferView, factor):
    for i in range(v.shape[0]):
        v[i] = v[i] * factor


@pytest.mark.parametrize(("start", "stop"), [(0, 16), (8, 24), (0, 32), (31, 32), (5, 5)])
def test_array_slices_are_windows(launch, start, stop):
    data = arange32()
    launch(scale, data[start:stop], 2.0)
    want = np.arange(32, dtype=np.float32)
    want[start:stop] *= 2
    np.testing.assert_array_equal(host(data), want)


def test_buffer_views_and_views_of_views(launch):
    data = arange32()
    v = qd.BufferView(data, offset=8, size=16)    # data[8:24]
    launch(scale, v, 2.0)
    launch(scale, v[4:12], 3.0)                   # data[12:20]
    launch(scale, v.subview(14, 2), -1.0)         # data[22:24]
    launch(scale, qd.BufferView(data[20:], 6), 10.0)  # data[26:32]: offsets accumulate
    want = np.arange(32, dtype=np.float32)
    want[8:24] *= 2
    want[12:20] *= 3
    want[22:24] *= -1
    want[26:] *= 10
    np.testing.assert_array_equal(host(data), want)


def test_plain_annotation_takes_the_dtype_from_the_argument(launch):
    for dtype in (np.float32, np.float64, np.int64):
        data = qd.asarray(np.arange(10, dtype=dtype))
        launch(scale_any, data[2:6], 3)
        want = np.arange(10, dtype=dtype)
        want[2:6] *= 3
        np.testing.assert_array_equal(host(data), want)
        assert host(data).dtype == dtype


@qd.kernel
def describe(v: qd.BufferView[qd.int64], out: qd.Array[qd.int64, 1]):
    out[0] = v.size
    out[1] = v.shape[0]
    out[2] = len(v)
    out[3] = v.ndim
    w = v[1:]
    out[4] = w.size
    out[5] = v[:].size
    out[6] = v.subview(0, 0).size


def test_size_shape_len(launch):
    data = qd.asarray(np.arange(20))
    out = np.zeros(7, np.int64)
    launch(describe, qd.BufferView(data, 3, 9), out)
    np.testing.assert_array_equal(out, [9, 9, 9, 1, 8, 9, 0])


@qd.kernel
def copy_window(src: qd.BufferView[qd.float64], dst: qd.BufferView[qd.float64]):
    for i in range(src.size):
        dst[i] = src[i] + 0.5


def test_two_views_of_one_array(launch):
    data = qd.asarray(np.arange(12.0))
    launch(copy_window, data[:4], data[8:12])
    np.testing.assert_array_equal(host(data), np.r_[np.arange(8.0), np.arange(4.0) + 0.5])


@qd.kernel
def halves(v: qd.BufferView[qd.float32], lo_value: qd.float32, hi_value: qd.float32):
    half = v.size // 2
    lo = v[:half]
    hi = v.subview(half, v.size - half)
    for i in range(lo.size):
        lo[i] = lo_value + qd.float32(i)
    for i in range(hi.size):
        hi[i] = hi_value


@pytest.mark.parametrize(("offset", "size"), [(0, 10), (4, 9), (7, 1), (3, 0)])
def test_kernel_side_subviews_and_slices(launch, offset, size):
    data = qd.zeros(20, dtype=qd.float32)
    launch(halves, qd.BufferView(data, offset, size), 1.0, -2.0)
    want = np.zeros(20, np.float32)
    half = size // 2
    want[offset:offset + half] = 1.0 + np.arange(half)
    want[offset + half:offset + size] = -2.0
    np.testing.assert_array_equal(host(data), want)


@qd.kernel
def nested(v: qd.BufferView[qd.int32], a: int, b: int, c: qd.int32, n: qd.uint8):
    w = v[a:b]                 # runtime bounds
    x = w.subview(1, w.size - 2)
    y = x[c:]                  # int32 start
    z = y[:n]                  # unsigned stop
    for i in range(z.size):
        z[i] = 100 + i
    if z.size > 0:
        z[0] += 1000


@pytest.mark.parametrize(("a", "b", "c", "n"), [(2, 18, 3, 4), (0, 20, 0, 18), (5, 9, 2, 0)])
def test_nested_kernel_side_views(launch, a, b, c, n):
    data = qd.zeros(20, dtype=qd.int32)
    launch(nested, data, a, b, c, n)
    want = np.zeros(20, np.int32)
    start = a + 1 + c
    want[start:start + n] = 100 + np.arange(n)
    if n:
        want[start] += 1000
    np.testing.assert_array_equal(host(data), want)


@qd.func
def fill(w: qd.BufferView[qd.float64], value: qd.float64):
    for k in range(w.size):
        w[k] = value


@qd.func
def fill_any(w: qd.BufferView, value):
    fill(w[1:], value)
    w[0] = -value


@qd.func
def first_half(w):
    return w[:w.size // 2]


@qd.kernel
def blocks(v: qd.BufferView[qd.float64], block: int):
    for b in range(v.size // block):
        fill_any(v.subview(b * block, block), qd.float64(b))
    fill(first_half(v[v.size - 4:]), 9.0)


def check_blocks(launch, n: int) -> None:
    data = qd.zeros(n + 3, dtype=qd.float64)
    launch(blocks, data[:n], 4)
    want = np.repeat(np.arange(n / 4), 4)
    want[::4] *= -1
    want[n - 4:n - 2] = 9.0
    np.testing.assert_array_equal(host(data)[:n], want)
    assert not host(data)[n:].any()


def test_views_pass_to_funcs_and_back(launch):
    check_blocks(launch, 16)


def test_subviews_in_a_parallel_launch():
    check_blocks(lambda kern, *args: kern(*args), 160_000)  # 40_000 threads run in parallel


@qd.kernel
def atomics(v: qd.BufferView[qd.int64], idx: qd.Array[qd.int64, 1]):
    w = v[2:]
    for i in range(idx.shape[0]):
        w[idx[i]] += 1
        qd.atomic_max(w[0], i)


def test_atomics_through_subviews(launch):
    data = qd.zeros(8, dtype=qd.int64)
    idx = np.array([1, 1, 4, 4, 4, 2], np.int64)
    launch(atomics, qd.BufferView(data, 1, 7), idx)
    want = np.zeros(8, np.int64)
    np.add.at(want, 3 + idx, 1)
    want[3] = 5  # the largest thread index
    np.testing.assert_array_equal(host(data), want)


def test_writes_bump_the_generation_of_the_base():
    data = arange32()
    before = data._buffer.generation
    scale(data[4:8], 2.0)
    scale(qd.BufferView(data, 0, 4).subview(1, 2), 2.0)
    assert data._buffer.generation == before + 2


@qd.kernel
def probe(v: qd.BufferView[qd.float64], factor: qd.float64):
    for i in range(v.size):
        v[i] = v[i] * factor


def test_packing_a_view_copies_nothing():
    data = qd.asarray(np.arange(32.0))
    memory = host(data)
    for arg in (data[8:12], qd.BufferView(data, 8, 4), qd.BufferView(data, 4, 12)[4:8]):
        probe(arg, 1.0)
        (launcher,) = [lau for key, lau in probe._launchers[qd.debug_mode()].items()
                       if key[0][0] is type(arg)]
        base, offset, size = launcher.pack((arg, 1.0))[:3]
        window = base[offset:offset + size]
        assert size == 4
        assert window.ctypes.data == memory[8:].ctypes.data  # the array's own memory
        assert np.shares_memory(window, memory)


def test_a_launch_allocates_no_copy_of_the_window():
    big = qd.zeros(1_000_000, dtype=qd.float64)
    probe(big[:900_000], 1.0)  # compiled and run once in parallel first
    probe(qd.BufferView(big, 0, 900_000), 1.0)
    tracemalloc.start()
    try:
        probe(big[1000:900_000], 2.0)
        probe(qd.BufferView(big, 1000, 899_000), 2.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100_000  # a copy would take 7 MB


# -- annotations and errors ----------------------------------------------------------------


def test_argument_errors():
    data = arange32()
    with pytest.raises(qd.KernelTypeError, match=r"expected qd.BufferView\[float32\], got "
                                                 r"BufferView\[float64\]"):
        scale(qd.asarray(np.zeros(4)), 1.0)
    with pytest.raises(ValueError, match=r"needs a contiguous array \(step 1\); got a view "
                                         "with step 2"):
        scale(data[::2], 1.0)
    with pytest.raises(ValueError, match=r"needs a 1-D array; got shape \(4, 8\)"):
        scale(qd.reshape(data, (4, 8)), 1.0)
    scale(data[:4], 1.0)  # the same signature as data[::2] below: checked on every call
    with pytest.raises(ValueError, match="got a view with step 2"):
        scale(data[::2], 1.0)
    with pytest.raises(ValueError, match="got a view with step -1"):
        scale(data[::-1], 1.0)


@qd.func
def wants_view(w: qd.BufferView[qd.float32]):
    w[0] = 1.0


@qd.kernel
def passes_array(x: qd.Array[qd.float32, 1]):
    wants_view(x)


@qd.kernel
def slices_array(x: qd.Array[qd.float32, 1]):
    y = x[1:3]  # noqa: F841


@qd.kernel
def strided(v: qd.BufferView[qd.float32]):
    w = v[0:8:2]  # noqa: F841


@qd.kernel
def from_end(v: qd.BufferView[qd.float32]):
    w = v[-4:]  # noqa: F841


@qd.kernel
def backwards(v: qd.BufferView[qd.float32]):
    w = v[6:2]  # noqa: F841


@qd.kernel
def negative_subview(v: qd.BufferView[qd.float32]):
    w = v.subview(-1, 2)  # noqa: F841


@qd.kernel
def float_size(v: qd.BufferView[qd.float32]):
    w = v.subview(0, 2.0)  # noqa: F841


@qd.kernel
def assigns_slice(v: qd.BufferView[qd.float32]):
    v[0:2] = 1.0


@qd.kernel
def array_subview(x: qd.Array[qd.float32, 1]):
    y = x.subview(0, 2)  # noqa: F841


@qd.kernel
def subview_arity(v: qd.BufferView[qd.float32]):
    w = v.subview(1)  # noqa: F841


@pytest.mark.parametrize(("kern", "cls", "first_line"), [
    (passes_array, qd.KernelTypeError,
     "Parameter 'w' of func 'wants_view' expects qd.BufferView[float32]; got Array[float32, 1]."),
    (slices_array, qd.KernelSyntaxError,
     "Slicing array 'x' is not supported in kernels; only BufferView values can be sliced."),
    (strided, qd.KernelSyntaxError,
     "BufferView slices in kernels need step 1; got step 2 in v[0:8:2]."),
    (from_end, qd.KernelSyntaxError,
     "Negative slice bound -4 in v[-4:]: kernels do not count from the end."),
    (backwards, qd.KernelSyntaxError, "The slice v[6:2] has stop 2 < start 6."),
    (negative_subview, qd.KernelSyntaxError,
     "The subview offset must be non-negative; got -1."),
    (float_size, qd.KernelTypeError,
     "The subview size must be an integer; got the constant 2.0."),
    (assigns_slice, qd.KernelSyntaxError, "Slices cannot be assigned or updated in kernels."),
    (array_subview, qd.KernelSyntaxError,
     "array 'x' has no method 'subview': only BufferView parameters have subviews in "
     "kernels."),
    (subview_arity, qd.KernelSyntaxError, "subview is missing its size."),
])
def test_compile_errors(kern, cls, first_line):
    arg = qd.zeros(8, dtype=qd.float32)
    with pytest.raises(cls) as info:
        kern(arg)
    text = str(info.value)
    assert text.split("\n", 1)[0] == first_line
    assert f'File "{__file__}"' in text


def test_compile_error_hints():
    with pytest.raises(qd.KernelSyntaxError) as info:
        from_end(qd.zeros(8, dtype=qd.float32))
    assert str(info.value).endswith("Use v.size - 4 instead.")
    with pytest.raises(qd.KernelSyntaxError) as info:
        strided(qd.zeros(8, dtype=qd.float32))
    assert str(info.value).endswith("Use a step-1 slice and index it with a stride, "
                                    "e.g. w[k * step].")
