"""The Array object: a typed, strided window on device storage.

An Array is (native array, dtype, device, buffer token). The native array is the backend's
own (a NumPy ndarray on the CPU, a CuPy array on CUDA, ...) and carries shape, strides and
offset. The buffer token is shared by every Array viewing the same memory and counts writes
(its `generation`), which the adstack sizing cache uses to know when a bound array changed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _dtypes
from ._devices import CPU, Device, as_device
from ._dtypes import DType

_PY_SCALARS = (bool, int, float, complex)


def _other_operand(other: Any, name: str) -> Any:
    """NotImplemented for operands Python should offer to the other side; a TypeError for NumPy
    arrays, which would otherwise turn the result into a NumPy array (or copy device data to
    the host) without a word."""
    if type(other) is np.ndarray:
        raise TypeError(
            f"{name} cannot combine a qdarray Array with a numpy.ndarray; use qd.asarray(a) "
            "to make it an Array (or np.asarray(x) to compute in NumPy)."
        )
    return NotImplemented


def _binary_operator(name: str) -> Any:
    def method(self: Array, other: Any) -> Any:
        if type(other) is not Array and type(other) not in _PY_SCALARS and not isinstance(
                other, np.generic):
            return _other_operand(other, name)
        return _dispatch.binary(name, self, other)

    method.__name__ = f"__{name}__"
    return method


def _reflected_operator(name: str) -> Any:
    def method(self: Array, other: Any) -> Any:
        if type(other) not in _PY_SCALARS and not isinstance(other, np.generic):
            return _other_operand(other, name)
        return _dispatch.binary(name, other, self)

    method.__name__ = f"__r{name}__"
    return method


def _inplace_operator(name: str) -> Any:
    def method(self: Array, other: Any) -> Any:
        if type(other) is not Array and type(other) not in _PY_SCALARS and not isinstance(
                other, np.generic):
            return _other_operand(other, name)
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


class Array:
    """An n-dimensional array on a device, following the Array API standard.

    Create arrays with the namespace's creation functions (`qd.asarray`, `qd.zeros`, ...);
    the constructor is private.
    """

    __slots__ = ("_data", "_dtype", "_device", "_buffer", "_grad", "__weakref__")

    _data: Any
    _dtype: DType
    _device: Device
    _buffer: Buffer
    _grad: Array | None

    def __new__(cls, *args: Any, **kwargs: Any) -> Array:
        raise TypeError(
            "Arrays are not created with Array(...); use qd.asarray, qd.zeros or another "
            "creation function."
        )

    @classmethod
    def _new(cls, data: Any, device: Device, buffer: Buffer | None = None) -> Array:
        """Wrap a native array. `buffer` is the token of the memory `data` views, if shared."""
        self = object.__new__(cls)
        self._data = data
        try:
            self._dtype = _dtypes._BY_NUMPY[data.dtype]
        except KeyError:
            self._dtype = _dtypes.from_numpy_dtype(data.dtype)
        self._device = device
        self._buffer = Buffer() if buffer is None else buffer
        self._grad = None
        return self

    def __class_getitem__(cls, params: Any) -> Any:
        """`qd.Array[dtype, ndim]` (or `qd.Array[dtype]`): a kernel parameter annotation."""
        from .kernels.types import array_annotation  # the kernel compiler imports Array

        return array_annotation(params)

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
        return Array._new(self._data.T, self._device, self._buffer)

    @property
    def mT(self) -> Array:
        """The transpose of the last two axes (a view)."""
        if self.ndim < 2:
            raise ValueError(f"x.mT needs at least 2 dimensions; got shape {self.shape}.")
        return Array._new(self._data.swapaxes(-1, -2), self._device, self._buffer)

    @property
    def grad(self) -> Array | None:
        """The gradient companion of an array created with `requires_grad=True`, else None."""
        return self._grad

    @property
    def requires_grad(self) -> bool:
        """Whether this array has a `.grad` companion."""
        return self._grad is not None

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
        import qdarray

        return qdarray

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

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-D array is undefined; use x.shape or x.size.")
        return self.shape[0]

    def __iter__(self) -> Any:
        if self.ndim == 0:
            raise TypeError("iteration over a 0-D array; use x[()] or float(x).")
        for i in range(self.shape[0]):
            yield self[i]

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
        return float(self._host().item())

    def __complex__(self) -> complex:
        self._need_0d("complex")
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
        if self._device is not CPU:
            if copy is False:
                raise ValueError(
                    f"np.asarray(x, copy=False) cannot view an array on {self._device}; "
                    "use x.to_device('cpu') first."
                )
            host = self._host()
        else:
            host = self._data
            # The caller may write through a zero-copy export.
            self._buffer.generation += 1
        if dtype is None and copy is not True:
            return host
        return np.array(host, dtype=dtype, copy=copy)

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        from ._interchange import dlpack_export

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

    # -- operators (semantics live in the backend's xp; dtype categories in _dispatch) -----

    # NumPy arrays and scalars on the left of an operator defer to these methods (NumPy gives
    # way to operands of higher priority), so `np.float32(2) * x` is an Array, not an ndarray.
    __array_priority__ = 100.0

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
        _indexing.setitem(self, key, value)


SUPPORTED_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12", "2025.12")

builtins_bool = bool

# Operators and indexing call these; they import Array. Bound once, since a function-level
# import costs about 0.5 us per call.
from . import _dispatch, _indexing  # noqa: E402
