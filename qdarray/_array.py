"""The Array object: a typed, strided window on device storage.

An Array is (native array, dtype, device, buffer token). The native array is the backend's
own (a NumPy ndarray on the CPU, a CuPy array on CUDA, ...) and carries shape, strides and
offset. The buffer token is shared by every Array viewing the same memory and counts writes
(its `generation`), which the adstack sizing cache uses to know when a bound array changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import _dtypes
from ._devices import CPU, Device, as_device
from ._dtypes import DType
from ._errors import DeviceUnavailableError
from ._numpy.methods import NumpyMethods

_PY_SCALARS = (bool, int, float, complex)
# Hooks that the layers above this one register, so that it imports none of them: the
# namespace `__array_namespace__` returns (the package qdarray registers itself), and how
# `qd.Array[...]` and `qd.BufferView[...]` make kernel parameter annotations (the kernel
# compiler registers them, kernels/types.py).
_NAMESPACE: list[Any] = []
_ANNOTATIONS: dict[str, Any] = {}
_BY_NUMPY = _dtypes._BY_NUMPY
_object_new = object.__new__  # Array.__new__ refuses direct construction


def register_namespace(namespace: Any) -> None:
    """Make `namespace` what `Array.__array_namespace__` returns (the package qdarray does)."""
    _NAMESPACE[:] = [namespace]


def register_annotations(**makers: Any) -> None:
    """How `qd.Array[...]` and `qd.BufferView[...]` (keywords Array, BufferView) make kernel
    parameter annotations (the kernel compiler registers them)."""
    _ANNOTATIONS.update(makers)


def annotation(kind: str, params: Any) -> Any:
    """The kernel parameter annotation `qd.<kind>[params]`."""
    make = _ANNOTATIONS.get(kind)
    if make is None:
        raise TypeError(f"qd.{kind}[...] is a kernel parameter annotation, which the kernel "
                        "compiler makes: import qdarray (the package) before using it.")
    return make(params)


def _host_operand(self: Array, other: Any, name: str) -> Any:
    """A NumPy array (or a list or tuple) beside an Array in an operator: an Array on the CPU
    (the ndarray itself, no copy), a copy on the Array's device elsewhere (the host-export
    rule, docs/numpy.md), NotImplemented for anything else (Python then asks the other
    operand)."""
    if not isinstance(other, np.ndarray | list | tuple):
        return NotImplemented
    try:
        return _numpy_operands.host_operand(other, self._device, name)
    except _numpy_operands.NotInNamespace:  # a NumPy-only dtype: NumPy's ufunc takes it
        return NotImplemented


def _binary_operator(name: str) -> Any:
    def method(self: Array, other: Any) -> Any:
        if type(other) is not Array and type(other) not in _PY_SCALARS and not isinstance(
                other, np.generic):
            other = _host_operand(self, other, name)
            if other is NotImplemented:
                return other
        return _dispatch.binary(name, self, other)

    method.__name__ = f"__{name}__"
    return method


def _reflected_operator(name: str) -> Any:
    def method(self: Array, other: Any) -> Any:
        if type(other) not in _PY_SCALARS and not isinstance(other, np.generic):
            other = _host_operand(self, other, name)
            if other is NotImplemented:
                return other
        return _dispatch.binary(name, other, self)

    method.__name__ = f"__r{name}__"
    return method


def _inplace_operator(name: str) -> Any:
    def method(self: Array, other: Any) -> Any:
        if type(other) is not Array and type(other) not in _PY_SCALARS and not isinstance(
                other, np.generic):
            other = _host_operand(self, other, name)
            if other is NotImplemented:
                return other
        return _dispatch.inplace(name, self, other)

    method.__name__ = f"__i{name}__"
    return method


def _unary_operator(name: str) -> Any:
    def method(self: Array) -> Array:
        return _dispatch.unary(name, self)

    method.__name__ = f"__{name}__"
    return method


class Buffer:
    """Identity and write generation of one piece of device memory, shared by its views."""

    __slots__ = ("generation", "__weakref__")

    def __init__(self) -> None:
        self.generation = 0

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled with the arrays that share it (pickle's memo keeps it shared); the copies
        # start a new write history.
        return (_rebuild_buffer, ())


class Array(NumpyMethods):
    """An n-dimensional array on a device, following the Array API standard.

    Create arrays with the namespace's creation functions (`qd.asarray`, `qd.zeros`, ...);
    the constructor is private.
    """

    __slots__ = ("_data", "_dtype", "_device", "_shared", "_grad", "_node", "_base", "__weakref__")

    _data: Any
    _dtype: DType
    _device: Device
    _shared: Buffer | None  # see _buffer
    _grad: Array | None
    _base: Array | None  # set on views only (x.base: _numpy/methods.py)
    # The tape node of an array computed from arrays with gradients inside a `qd.ad.Tape`
    # (qdarray/_autodiff.py); None for every other array.
    _node: Any

    def __new__(cls, *args: Any, **kwargs: Any) -> Array:
        raise TypeError(
            "Arrays are not created with Array(...); use qd.asarray, qd.zeros or another "
            "creation function."
        )

    @staticmethod
    def _new(data: Any, device: Device, buffer: Buffer | None = None) -> Array:
        """Wrap a native array. `buffer` is the token of the memory `data` views, if shared."""
        self: Array = _object_new(Array)  # a static method: a class method's binding costs
        self._data = data
        try:
            self._dtype = _BY_NUMPY[data.dtype]
        except KeyError:
            self._dtype = _dtypes.from_numpy_dtype(data.dtype)
        self._device = device
        self._shared = buffer
        self._grad = None
        self._node = None
        return self

    @staticmethod
    def _new_view(data: Any, of: Array) -> Array:
        """Wrap `data`, a view of `of`'s memory: shares its buffer token, `base` is `of`'s."""
        out = Array._new(data, of._device, of._buffer)
        base = getattr(of, "_base", None)  # a slot set on views only
        out._base = of if base is None else base
        return out

    @property
    def _buffer(self) -> Buffer:
        """The identity and write generation of the memory this array views, shared with every
        view of it. Made on first use: most arrays (operation results) are never viewed or
        written, and an object per result would cost every small operation."""
        buffer = self._shared
        if buffer is None:
            buffer = self._shared = Buffer()
        return buffer

    def _view(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Array:
        """The view `fn(<this array's native array>, *args, **kwargs)` of this array's memory,
        as an Array sharing its buffer token (writes through either count for both), with the
        same view of its gradient companion: a kernel given the view reads and accumulates
        the gradient of these very elements. Inside a tape, an array the tape computed gets
        its companion first (`_autodiff.companion`). Every namespace function that returns a
        view of its argument (slices, .T, reshape, flip, ...) goes through here."""
        out = Array._new_view(fn(self._data, *args, **kwargs), self)
        g = self._grad
        if g is None and self._node is not None:
            if _autodiff.views_recorded(self):  # no companion: the view is recorded instead
                return _autodiff.alias_view(self, out, lambda d: fn(d, *args, **kwargs))
            g = _autodiff.companion(self)
        if g is not None:
            try:
                gdata = fn(g._data, *args, **kwargs)
            except (ValueError, AttributeError):  # no view of the gradient (reshape(copy=False)
                # of one laid out otherwise; CuPy raises AttributeError)
                gdata = None
            if gdata is None or gdata.shape != out.shape:
                from ._errors import AutodiffError

                raise AutodiffError(
                    f"A view of shape {out.shape} of this array cannot carry its gradient: "
                    f"the gradient companion (strides {g.strides}) is laid out unlike the "
                    f"array (strides {self.strides}), so the same view of it would be a "
                    "copy. Use qd.asarray(x, copy=True, requires_grad=True) to start from a "
                    "contiguous array, or index the array inside the kernel instead.")
            out._grad = Array._new(gdata, g._device, g._buffer)
        return out

    def __class_getitem__(cls, params: Any) -> Any:
        """`qd.Array[dtype, ndim]` (or `qd.Array[dtype]`): a kernel parameter annotation."""
        return annotation("Array", params)

    # -- attributes ------------------------------------------------------------------------

    @property
    def dtype(self) -> DType:
        """The data type of the elements."""
        return self._dtype

    @property
    def device(self) -> Device:
        """The device holding the data."""
        return self._device

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape as a tuple of ints."""
        return self._data.shape  # type: ignore[no-any-return]

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self._data.ndim  # type: ignore[no-any-return]

    @property
    def size(self) -> int:
        """The number of elements."""
        return self._data.size  # type: ignore[no-any-return]

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in bytes, as NumPy reports them."""
        return self._data.strides  # type: ignore[no-any-return]

    @property
    def T(self) -> Array:
        """The transpose of a 0-, 1- or 2-D array (use `mT` or `permute_dims` above 2-D)."""
        if self.ndim > 2:
            raise ValueError(
                f"x.T is defined for arrays of at most 2 dimensions; got {self.ndim}. "
                "Use x.mT to transpose the last two axes, or qd.permute_dims."
            )
        return self._view(_transposed)

    @property
    def mT(self) -> Array:
        """The transpose of the last two axes (a view)."""
        if self.ndim < 2:
            raise ValueError(f"x.mT needs at least 2 dimensions; got shape {self.shape}.")
        return self._view(_swapped)

    @property
    def grad(self) -> Array | None:
        """The gradient companion of an array created with `requires_grad=True`, else None."""
        return self._grad

    @property
    def requires_grad(self) -> bool:
        """Whether gradients flow to this array: it has a `.grad` companion, or a recording
        `qd.ad.Tape` computed it from arrays that have one."""
        node = self._node
        return self._grad is not None or (node is not None and node.tape.recording)

    # -- device transfer ---------------------------------------------------------------------

    def to_device(self, device: Any, /, *, stream: Any = None) -> Array:
        """A copy of the array on `device` (the array itself when it is already there)."""
        target = as_device(device)
        if target is self._device:
            return self
        from ._transfer import transfer

        return transfer(self, target, stream)

    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        if api_version is not None and api_version not in SUPPORTED_API_VERSIONS:
            raise ValueError(
                f"Unsupported Array API version {api_version!r}; qdarray implements "
                f"{', '.join(SUPPORTED_API_VERSIONS)}."
            )
        return _NAMESPACE[0]

    # -- Python protocol -------------------------------------------------------------------

    def __repr__(self) -> str:
        host = self._host()
        body = np.array2string(host, separator=", ", prefix="Array(")
        suffix = f", dtype={self._dtype.name}"
        if self._device is not CPU:
            suffix += f", device='{self._device}'"
        return f"Array({body}{suffix})"

    def __str__(self) -> str:
        return str(self._host())

    def __format__(self, spec: str) -> str:
        """`f"{x:.3f}"` of a 0-D array formats its value, as NumPy's 0-D arrays do; other
        arrays take only the empty spec (their `str`)."""
        if spec and self.ndim == 0:
            return format(self._host().item(), spec)  # text: allowed on a tape (refuse_export)
        return format(self._host(), spec)

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-D array is undefined; use x.shape or x.size.")
        return self.shape[0]

    def __iter__(self) -> Any:
        # Raised by iter(x) itself, not at the first next(), as NumPy's: `np.iterable(x)` (which
        # SciPy uses to tell a lone argument from a tuple of them) must answer False.
        if self.ndim == 0:
            raise TypeError("iteration over a 0-D array; use x[()] or float(x).")
        return (self[i] for i in range(self.shape[0]))

    def __hash__(self) -> int:
        raise TypeError("Arrays are mutable and unhashable.")

    def __bool__(self) -> bool:
        if self.ndim != 0:
            if self.size == 1:
                return builtins_bool(self._host().item())
            raise ValueError(
                f"The truth value of an array of shape {self.shape} is ambiguous; "
                "use qd.any(x) or qd.all(x)."
            )
        return builtins_bool(self._host().item())

    def __int__(self) -> int:
        self._need_0d("int")
        if self._dtype.kind == "c":
            raise TypeError("int() of a complex array is undefined; use qd.real(x) first.")
        value = self._host().item()
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            raise (ValueError if value != value else OverflowError)(
                f"cannot convert {value} to int"
            )
        return int(value)

    def __float__(self) -> float:
        self._need_0d("float")
        if self._dtype.kind == "c":
            raise TypeError("float() of a complex array is undefined; use qd.real(x) first.")
        _autodiff.refuse_export("float(x)", self)
        return float(self._host().item())

    def __complex__(self) -> complex:
        self._need_0d("complex")
        _autodiff.refuse_export("complex(x)", self)
        return complex(self._host().item())

    def __index__(self) -> int:
        self._need_0d("index")
        if self._dtype.kind not in "iu":
            raise TypeError(
                f"Only integer arrays can be used as an index; got dtype {self._dtype}."
            )
        return int(self._host().item())

    def _need_0d(self, kind: str) -> None:
        if self.ndim != 0:
            raise TypeError(
                f"Only 0-D arrays can be converted to Python {kind}; got shape {self.shape}. "
                "Use x[()] on a 0-D array, or index a single element first."
            )

    def _host(self) -> np.ndarray:
        return self._device.backend.to_host(self._data)

    # -- interchange -----------------------------------------------------------------------

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        # NumPy code on the values is invisible to the tape: a gradient through it (or through
        # qd.asarray of the export, a wrapper without a gradient) would be lost
        _autodiff.refuse_export("np.asarray(x) (x.__array__)", self)
        if self._device is not CPU:
            if copy is False:
                raise ValueError(
                    f"np.asarray(x, copy=False) cannot view an array on {self._device}; "
                    "use x.to_device('cpu') first."
                )
            host = self._host()
        else:
            host = self._data
            # The caller may write through a zero-copy export, or wrap it in another Array.
            self._buffer.generation += 1
        if dtype is None and copy is not True:
            if host is self._data:
                _memory.share(host, self._buffer)
            return host
        return np.array(host, dtype=dtype, copy=copy)

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        from ._interchange import dlpack_export

        _autodiff.refuse_export("x.__dlpack__() (np.from_dlpack(x), torch.from_dlpack(x))", self)
        return dlpack_export(self, stream=stream, max_version=max_version,
                             dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._data.__dlpack_device__()  # type: ignore[no-any-return]

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The CUDA Array Interface (version 3) of an array on a CUDA device, so that CuPy,
        PyTorch, numba and other consumers view its memory without a copy."""
        face = self._device.backend.cuda_array_interface(self._data)
        if face is None:
            raise AttributeError(
                f"Arrays on {self._device} have no __cuda_array_interface__; arrays on CUDA "
                "devices do (x.to_device('cuda:0')). Use x.__dlpack__() or np.asarray(x).")
        self._buffer.generation += 1  # the consumer may write through it
        return face

    # -- NumPy protocols (the table and the CPU fallback live in _numpy_protocols) ----------

    # NumPy's binary operators defer to __array_ufunc__; other libraries (Dask's tensordot,
    # ...) still rank array types by priority, and CuPy's is 100 too.
    __array_priority__ = 100.0

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return _numpy_protocols.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return _numpy_protocols.array_function(self, func, types, args, kwargs)

    # -- pickling and copying --------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle the values (as a NumPy array), the device's name and the gradient companion;
        unpickling allocates on that device (DeviceUnavailableError when it is absent)."""
        if self._device is CPU:
            # The ndarray itself: pickle's memo keeps arrays that share it sharing it.
            return (_rebuild, (self._data, "cpu", self._buffer, self._grad))
        return (_rebuild, (self._host(), str(self._device), None, self._grad))

    def __copy__(self) -> Array:
        """`copy.copy(x)`: a copy of the values on the same device, as NumPy's."""
        return self._copied()

    def __deepcopy__(self, memo: dict[int, Any]) -> Array:
        """`copy.deepcopy(x)`: a copy of the values (and of the gradient companion)."""
        return self._copied()

    def _copied(self) -> Array:
        device = self._device
        result = Array._new(device.backend.asarray(self._data, None, True, device), device)
        if self._grad is not None:
            result._grad = self._grad._copied()
        return result

    # -- NumPy's methods: each is the NumPy function of the same name, so it computes with
    # -- the namespace function that function maps to (_numpy_functions.FUNCTIONS).

    def sum(self, *args: Any, **kwargs: Any) -> Array:
        """`np.sum(x, ...)`: `qd.sum` with NumPy's arguments (axis, dtype, keepdims)."""
        return _call_numpy(np.sum, (self, *args), kwargs)

    def prod(self, *args: Any, **kwargs: Any) -> Array:
        """`np.prod(x, ...)`: `qd.prod` with NumPy's arguments."""
        return _call_numpy(np.prod, (self, *args), kwargs)

    def mean(self, *args: Any, **kwargs: Any) -> Array:
        """`np.mean(x, ...)`: `qd.mean` (integers in float64, as NumPy's)."""
        return _call_numpy(np.mean, (self, *args), kwargs)

    def std(self, *args: Any, **kwargs: Any) -> Array:
        """`np.std(x, ...)`: `qd.std`, with NumPy's `ddof` as the standard's `correction`."""
        return _call_numpy(np.std, (self, *args), kwargs)

    def var(self, *args: Any, **kwargs: Any) -> Array:
        """`np.var(x, ...)`: `qd.var`, with NumPy's `ddof` as the standard's `correction`."""
        return _call_numpy(np.var, (self, *args), kwargs)

    def min(self, *args: Any, **kwargs: Any) -> Array:
        """`np.min(x, ...)`: `qd.min`."""
        return _call_numpy(np.min, (self, *args), kwargs)

    def max(self, *args: Any, **kwargs: Any) -> Array:
        """`np.max(x, ...)`: `qd.max`."""
        return _call_numpy(np.max, (self, *args), kwargs)

    def argmin(self, *args: Any, **kwargs: Any) -> Array:
        """`np.argmin(x, ...)`: `qd.argmin` (over the flattened array when axis is None)."""
        return _call_numpy(np.argmin, (self, *args), kwargs)

    def argmax(self, *args: Any, **kwargs: Any) -> Array:
        """`np.argmax(x, ...)`: `qd.argmax` (over the flattened array when axis is None)."""
        return _call_numpy(np.argmax, (self, *args), kwargs)

    def cumsum(self, *args: Any, **kwargs: Any) -> Array:
        """`np.cumsum(x, ...)`: `qd.cumulative_sum` (of the flattened array for axis=None)."""
        return _call_numpy(np.cumsum, (self, *args), kwargs)

    def cumprod(self, *args: Any, **kwargs: Any) -> Array:
        """`np.cumprod(x, ...)`: `qd.cumulative_prod` (flattened for axis=None)."""
        return _call_numpy(np.cumprod, (self, *args), kwargs)

    def any(self, *args: Any, **kwargs: Any) -> Array:
        """`np.any(x, ...)`: `qd.any`."""
        return _call_numpy(np.any, (self, *args), kwargs)

    def all(self, *args: Any, **kwargs: Any) -> Array:
        """`np.all(x, ...)`: `qd.all`."""
        return _call_numpy(np.all, (self, *args), kwargs)

    def reshape(self, *shape: Any, order: str = "C", copy: bool | None = None) -> Array:
        """`x.reshape(2, 3)` or `x.reshape((2, 3))`: `qd.reshape` (a view when possible)."""
        target = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return _call_numpy(np.reshape, (self, target), {"order": order, "copy": copy})

    def ravel(self, order: str = "C") -> Array:
        """`np.ravel(x)`: `qd.reshape(x, (-1,))` (a view when possible)."""
        return _call_numpy(np.ravel, (self, order), {})

    def flatten(self, order: str = "C") -> Array:
        """A flattened copy (NumPy's `x.flatten()`)."""
        return _call_numpy(np.copy, (self.ravel(order),), {})

    def transpose(self, *axes: Any) -> Array:
        """`x.transpose()`, `x.transpose(1, 0)` or `x.transpose((1, 0))`: `qd.permute_dims`."""
        order = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes or None
        return _call_numpy(np.transpose, (self, order), {})

    def swapaxes(self, axis1: int, axis2: int) -> Array:
        """`np.swapaxes(x, axis1, axis2)`: `qd.permute_dims` with two axes exchanged."""
        return _call_numpy(np.swapaxes, (self, axis1, axis2), {})

    def squeeze(self, axis: Any = None) -> Array:
        """`np.squeeze(x, axis)`: `qd.squeeze` (every length-1 axis when axis is None)."""
        return _call_numpy(np.squeeze, (self, axis), {})

    def astype(self, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True,
               copy: bool = True) -> Array:
        """NumPy's `x.astype(dtype)`: `qd.astype` (a copy unless copy=False and the dtype is
        already `dtype`); `casting=` other than "unsafe" is checked as NumPy checks it."""
        target = _dtypes.normalize_dtype(dtype)
        if casting != "unsafe" and target is not None and not np.can_cast(
                self._dtype._np, target._np, casting=casting):  # type: ignore[arg-type]
            raise TypeError(f"Cannot cast array data from {self._dtype} to {target} according "
                            f"to the rule {casting!r}.")
        return _call_numpy(np.astype, (self, dtype), {"copy": copy})

    def copy(self, order: str = "K") -> Array:
        """A copy of the values on the same device (`np.copy(x)`)."""
        return _call_numpy(np.copy, (self, order), {})

    def fill(self, value: Any) -> None:
        """Set every element to `value` (`x[...] = value`, with the namespace's casting rules)."""
        _indexing.setitem(self, Ellipsis, value)

    def tolist(self) -> Any:
        """The values as nested Python lists of Python scalars (copied to the host)."""
        _autodiff.refuse_export("x.tolist()", self)
        return self._host().tolist()

    def tobytes(self, order: str = "C") -> bytes:
        """The raw bytes of the values in C (or "F") order (copied to the host)."""
        _autodiff.refuse_export("x.tobytes()", self)
        return self._host().tobytes(order=order)  # type: ignore[arg-type]

    def item(self, *args: Any) -> Any:
        """One element as a Python scalar: `x.item()` of a one-element array, `x.item(k)` by
        flat index, `x.item(i, j)` by position; only that element is copied to the host."""
        _autodiff.refuse_export("x.item()", self)
        if not args:
            if self.size != 1:
                raise ValueError("can only convert an array of size 1 to a Python scalar")
            return self._host().item()
        if len(args) == 1 and isinstance(args[0], int | np.integer):
            args = tuple(int(i) for i in np.unravel_index(int(args[0]), self.shape))
        elif len(args) == 1:
            args = tuple(args[0])
        return self[args]._host().item()

    @property
    def real(self) -> Array:
        """The real part (`qd.real`); the values themselves for real dtypes."""
        return _elementwise.real(self)

    @property
    def imag(self) -> Array:
        """The imaginary part (`qd.imag`); zeros for real dtypes."""
        return _elementwise.imag(self)

    def conj(self) -> Array:
        """The complex conjugate (`qd.conj`)."""
        return _elementwise.conj(self)

    conjugate = conj

    def dot(self, b: Any, out: Any = None) -> Array:
        """`np.dot(x, b)`: `qd.matmul` for 1-D and 2-D operands, `qd.tensordot` above."""
        return _call_numpy(np.dot, (self, b, out), {})

    def clip(self, *args: Any, **kwargs: Any) -> Array:
        """`np.clip(x, min, max)`: `qd.clip`."""
        return _call_numpy(np.clip, (self, *args), kwargs)

    def round(self, decimals: int = 0, out: Any = None) -> Array:
        """`np.round(x, decimals)`: `qd.round`, scaled by 10**decimals as NumPy does."""
        return _call_numpy(np.round, (self, decimals, out), {})

    def nonzero(self) -> tuple[Array, ...]:
        """`np.nonzero(x)`: `qd.nonzero`."""
        return _numpy_protocols.call_numpy(np.nonzero, (self,), {})  # type: ignore[no-any-return]

    def sort(self, *args: Any, **kwargs: Any) -> None:
        """Sort in place along an axis (last by default), as NumPy's `x.sort()`."""
        _indexing.setitem(self, Ellipsis, _call_numpy(np.sort, (self, *args), kwargs))

    def take(self, *args: Any, **kwargs: Any) -> Array:
        """`np.take(x, indices, axis=None)`: `qd.take` (of the flattened array without axis)."""
        return _call_numpy(np.take, (self, *args), kwargs)

    def argsort(self, *args: Any, **kwargs: Any) -> Array:
        """`np.argsort(x, ...)`: `qd.argsort` (a stable order)."""
        return _call_numpy(np.argsort, (self, *args), kwargs)

    def view(self, dtype: Any = None) -> Array:
        """A new Array on the same memory: `x.view()`; on the CPU, `x.view(dtype)` reinterprets
        the bytes as another dtype of the same size (uint32 <-> float32, ...)."""
        if dtype is None:
            return self._view(_whole)
        target = _dtypes.normalize_dtype(dtype)
        assert target is not None
        if target is self._dtype:  # no reinterpretation: a view on every device
            return self._view(_whole)
        if self._device is not CPU:
            raise TypeError(
                f"x.view({target}) reinterprets memory of CPU arrays only, not on "
                f"{self._device}; use x.to_device('cpu').view({target}), or x.astype({target}) "
                "to convert the values."
            )
        if target.itemsize != self._dtype.itemsize:
            raise ValueError(
                f"x.view({target}) would reinterpret {self._dtype.itemsize}-byte elements as "
                f"{target.itemsize}-byte ones; only a dtype of the same size is supported. "
                f"Use x.astype({target}) to convert the values instead."
            )
        if target is self._dtype:
            return self._view(_whole)
        # Other values bit for bit: nothing differentiable relates them to this array's.
        return Array._new_view(self._data.view(target._np), self)

    @property
    def itemsize(self) -> int:
        """The size of one element in bytes."""
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        """The size of the values in bytes (`size * itemsize`)."""
        return self.size * self._dtype.itemsize

    # -- operators (semantics live in the backend's xp; dtype categories in _dispatch) -----

    __add__ = _binary_operator("add")
    __radd__ = _reflected_operator("add")
    __iadd__ = _inplace_operator("add")
    __sub__ = _binary_operator("subtract")
    __rsub__ = _reflected_operator("subtract")
    __isub__ = _inplace_operator("subtract")
    __mul__ = _binary_operator("multiply")
    __rmul__ = _reflected_operator("multiply")
    __imul__ = _inplace_operator("multiply")
    __truediv__ = _binary_operator("divide")
    __rtruediv__ = _reflected_operator("divide")
    __itruediv__ = _inplace_operator("divide")
    __floordiv__ = _binary_operator("floor_divide")
    __rfloordiv__ = _reflected_operator("floor_divide")
    __ifloordiv__ = _inplace_operator("floor_divide")
    __mod__ = _binary_operator("remainder")
    __rmod__ = _reflected_operator("remainder")
    __imod__ = _inplace_operator("remainder")
    __pow__ = _binary_operator("pow")
    __rpow__ = _reflected_operator("pow")
    __ipow__ = _inplace_operator("pow")
    __matmul__ = _binary_operator("matmul")
    __rmatmul__ = _reflected_operator("matmul")
    __imatmul__ = _inplace_operator("matmul")
    __and__ = _binary_operator("bitwise_and")
    __rand__ = _reflected_operator("bitwise_and")
    __iand__ = _inplace_operator("bitwise_and")
    __or__ = _binary_operator("bitwise_or")
    __ror__ = _reflected_operator("bitwise_or")
    __ior__ = _inplace_operator("bitwise_or")
    __xor__ = _binary_operator("bitwise_xor")
    __rxor__ = _reflected_operator("bitwise_xor")
    __ixor__ = _inplace_operator("bitwise_xor")
    __lshift__ = _binary_operator("bitwise_left_shift")
    __rlshift__ = _reflected_operator("bitwise_left_shift")
    __ilshift__ = _inplace_operator("bitwise_left_shift")
    __rshift__ = _binary_operator("bitwise_right_shift")
    __rrshift__ = _reflected_operator("bitwise_right_shift")
    __irshift__ = _inplace_operator("bitwise_right_shift")
    __lt__ = _binary_operator("less")
    __le__ = _binary_operator("less_equal")
    __gt__ = _binary_operator("greater")
    __ge__ = _binary_operator("greater_equal")
    __eq__ = _binary_operator("equal")
    __ne__ = _binary_operator("not_equal")
    __neg__ = _unary_operator("negative")
    __pos__ = _unary_operator("positive")
    __abs__ = _unary_operator("abs")
    __invert__ = _unary_operator("bitwise_invert")

    # -- indexing --------------------------------------------------------------------------

    def __getitem__(self, key: Any) -> Array:
        return _indexing.getitem(self, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(value, np.ndarray | list | tuple):
            # NumPy data as the operators take it: the ndarray itself on the CPU, a copy on
            # the array's device elsewhere
            host = _host_operand(self, value, "x[key] = value")
            value = value if host is NotImplemented else host
        _indexing.setitem(self, key, value)


def _call_numpy(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Array:
    """NumPy's `func(*args, **kwargs)` through the protocol's table (for NumPy's methods)."""
    return _numpy_protocols.call_numpy(func, args, kwargs)  # type: ignore[no-any-return]


def _rebuild(data: np.ndarray, device: str, buffer: Buffer | None, grad: Array | None) -> Array:
    """Unpickle an Array: its values on the device named `device`, which must be present."""
    target = Device(device)
    if target is CPU:
        native = data if type(data) is np.ndarray else data.view(np.ndarray)  # joblib's memmaps
    else:
        try:
            present = target in target.backend.devices()
        except (ImportError, RuntimeError, OSError) as exc:
            present, why = False, f": {exc}"
        else:
            why = f" (present: {', '.join(map(str, target.backend.devices())) or 'none'})"
        if not present:
            raise DeviceUnavailableError(
                f"Cannot unpickle an array stored on {target}: that device is not present in "
                f"this process{why}. Unpickle it where {target} is present, or pickle "
                "x.to_device('cpu') instead."
            )
        native = target.backend.asarray(data, None, True, target)
    result = Array._new(native, target, buffer)
    result._grad = grad
    return result


def _rebuild_buffer() -> Buffer:
    return Buffer()


SUPPORTED_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12")

builtins_bool = bool


def _transposed(data: Any) -> Any:
    return data.T


def _swapped(data: Any) -> Any:
    return data.swapaxes(-1, -2)


def _whole(data: Any) -> Any:
    return data[...]


# Operators, indexing and the NumPy protocols call these; they import Array. Bound once, since
# a function-level import costs about 0.5 us per call.
from . import _autodiff, _dispatch, _indexing, _memory  # noqa: E402
from . import _elementwise_functions as _elementwise  # noqa: E402
from ._numpy import operands as _numpy_operands  # noqa: E402
from ._numpy import protocols as _numpy_protocols  # noqa: E402
