"""BufferView: a 1-D, contiguous, typed, zero-copy window `(base, offset, size)` on an array.

Views validate their bounds on the host when they are made, so a kernel given a view can only
address memory inside its window (debug mode checks every kernel-side access as well).

Example::

    data = qd.zeros(32, dtype=qd.float32)
    v = qd.BufferView(data, offset=16, size=8)   # data[16:24]
    w = v[2:6]                                  # data[18:22]: offsets accumulate
    qd.asarray(w)                               # an Array sharing data's memory
"""

from __future__ import annotations

import operator
from typing import Any

from . import _autodiff
from ._array import Array, annotation
from ._devices import Device
from ._dtypes import DType


def _as_count(value: Any, what: str) -> int:
    """An offset or size as a non-negative Python int (bools and floats are rejected)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(
            f"BufferView {what} must be an integer; got {type(value).__name__} {value!r}."
        )
    n = operator.index(value)
    if n < 0:
        raise ValueError(f"BufferView {what} must be non-negative; got {what}={n}.")
    return n


def _root_window(arr: Array) -> tuple[Array, int]:
    """The 1-D contiguous root array that `arr` is a window of, and `arr`'s offset in it."""
    if arr.ndim != 1:
        raise ValueError(
            f"BufferView needs a 1-D array; got shape {arr.shape}. "
            "Use x.reshape(-1) on a contiguous array to get a 1-D view first."
        )
    itemsize = arr.dtype.itemsize
    if arr.size > 1 and arr.strides[0] != itemsize:
        step = arr.strides[0] // itemsize if arr.strides[0] % itemsize == 0 else None
        raise ValueError(
            f"BufferView needs a contiguous array (step 1); got a view with step {step} "
            f"(stride {arr.strides[0]} bytes for {itemsize}-byte elements). "
            "Use a step-1 slice, or qd.asarray(x, copy=True) to make a contiguous copy."
        )
    root, offset = arr.device.backend.window_root(arr._data)
    if root is arr._data:
        return arr, 0
    base = Array._new(root, arr.device, arr._buffer)
    base._grad = None
    return base, offset


class BufferView:
    """A zero-copy 1-D window `base[offset : offset + size]` on a contiguous array.

    Args:
        arr: a 1-D contiguous Array (or a contiguous 1-D slice of one: offsets accumulate).
        offset: first element of the window, in elements of `arr`.
        size: number of elements.

    Raises:
        TypeError: `arr` is not an Array (a view of a view goes through `subview` or slicing),
            or offset/size are not integers.
        ValueError: negative offset or size, a window beyond `arr`, `arr` not 1-D or not
            contiguous.
    """

    __slots__ = ("_base", "_offset", "_size", "_grad_base", "__weakref__")

    _base: Array
    _offset: int
    _size: int
    _grad_base: Array | None

    def __init__(self, arr: Array, offset: Any = 0, size: Any = None) -> None:
        if isinstance(arr, BufferView):
            raise TypeError(
                "BufferView(view, ...) is not supported; use view.subview(offset, size) or "
                "view[a:b] to make a narrower view of a view."
            )
        if type(arr) is not Array:
            raise TypeError(
                f"BufferView needs a qdarray Array; got {type(arr).__name__}. "
                "Use qd.asarray(x) first."
            )
        base, base_offset = _root_window(arr)  # 1-D and contiguous, or it raises
        off = _as_count(offset, "offset")
        n = _as_count(max(arr.shape[0] - off, 0) if size is None else size, "size")
        if off + n > arr.shape[0]:
            raise ValueError(
                f"BufferView window [{off}, {off + n}) (offset={off}, size={n}) exceeds the "
                f"array's length {arr.shape[0]}; use offset + size <= {arr.shape[0]}."
            )
        self._base = base
        self._offset = base_offset + off
        self._size = n
        grad = arr._grad
        if grad is None and arr._node is not None:
            grad = _autodiff.companion(arr)  # an array a tape computed: it gets one now
        if grad is not None:
            self._grad_base, _ = _root_window(grad)
        else:
            self._grad_base = None

    def __class_getitem__(cls, params: Any) -> Any:
        """`qd.BufferView[dtype]`: a kernel parameter annotation (plain `qd.BufferView`
        takes the dtype from the argument)."""
        return annotation("BufferView", params)

    @classmethod
    def _make(cls, base: Array, offset: int, size: int, grad_base: Array | None) -> BufferView:
        view = object.__new__(cls)
        view._base = base
        view._offset = offset
        view._size = size
        view._grad_base = grad_base
        return view

    # -- attributes --------------------------------------------------------------------------

    @property
    def base(self) -> Array:
        """The 1-D contiguous array whose memory the view addresses."""
        return self._base

    @property
    def offset(self) -> int:
        """Offset of the first element in `base`, in elements."""
        return self._offset

    @property
    def size(self) -> int:
        """Number of elements in the window."""
        return self._size

    @property
    def shape(self) -> tuple[int]:
        """`(size,)`."""
        return (self._size,)

    @property
    def ndim(self) -> int:
        """Always 1."""
        return 1

    @property
    def dtype(self) -> DType:
        """The element dtype (the base's)."""
        return self._base.dtype

    @property
    def device(self) -> Device:
        """The device of the base array."""
        return self._base.device

    @property
    def grad(self) -> BufferView | None:
        """The matching window of the base's gradient, when the base requires grad."""
        if self._grad_base is None:
            return None
        return BufferView._make(self._grad_base, self._offset, self._size, None)

    def __len__(self) -> int:
        return self._size

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as a window of its pickled base: views pickled together with their base
        (or with each other) unpickle sharing one base again, on the CPU."""
        return (BufferView._make, (self._base, self._offset, self._size, self._grad_base))

    def __repr__(self) -> str:
        return (f"BufferView(offset={self._offset}, size={self._size}, "
                f"dtype={self.dtype.name}, device='{self.device}')")

    # -- narrower views ----------------------------------------------------------------------

    def subview(self, offset: Any, size: Any) -> BufferView:
        """The window `self[offset : offset + size]`; offsets accumulate."""
        off = _as_count(offset, "offset")
        n = _as_count(size, "size")
        if off + n > self._size:
            raise ValueError(
                f"subview(offset={off}, size={n}) exceeds its parent view of size "
                f"{self._size} (parent offset={self._offset}); use offset + size <= "
                f"{self._size}."
            )
        return BufferView._make(self._base, self._offset + off, n, self._grad_base)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            if key.step is not None and key.step != 1:
                raise ValueError(
                    f"BufferView slices need step 1; got step {key.step}. "
                    "Use qd.asarray(view)[a:b:step] for a strided Array view."
                )
            start = 0 if key.start is None else _as_count(key.start, "slice start")
            stop = self._size if key.stop is None else _as_count(key.stop, "slice stop")
            if stop < start:
                raise ValueError(
                    f"BufferView slice [{start}:{stop}] has stop < start; "
                    "use start <= stop."
                )
            if stop > self._size:
                raise ValueError(
                    f"BufferView slice [{start}:{stop}] exceeds the view's size {self._size}; "
                    f"use stop <= {self._size}."
                )
            return self.subview(start, stop - start)
        return self._as_array()[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        self._as_array()[key] = value

    # -- as an array -------------------------------------------------------------------------

    def _as_array(self) -> Array:
        """The window as an Array sharing the base's memory and write generation."""
        base = self._base
        start = self._offset
        window = Array._new(base._data[start:start + self._size], base._device, base._buffer)
        if self._grad_base is not None:
            g = self._grad_base
            window._grad = Array._new(g._data[start:start + self._size], g._device, g._buffer)
        return window

    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        return self._as_array().__array_namespace__(api_version=api_version)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        return self._as_array().__array__(dtype=dtype, copy=copy)

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._as_array().__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._as_array().__dlpack_device__()
