"""NumPy's array methods that the standard has no function for: `trace`, `repeat`,
`diagonal`, `compress`, `put`, `partition`, and the attributes `flat`, `flags` and `base`.

`Array` inherits them from `NumpyMethods`. They compute through NumPy's own functions called
on the array (`np.trace(x, ...)`), which the NumPy protocol maps to the namespace on the
array's device (`_numpy_functions.FUNCTIONS`), or through the namespace reached from the array
(`x.__array_namespace__()`), so this module imports nothing of the package above `_dtypes`
and `Array` can inherit it before the namespace exists.

Note: `x.flags` reports what NumPy users test (c_contiguous, f_contiguous, writeable,
owndata); `x.base` is the Array this one views (views of views give the first array, as in
NumPy), None for an array that owns its memory, also when it was made from a NumPy array
without a copy (NumPy's `base` would be that ndarray):
https://numpy.org/doc/stable/reference/generated/numpy.ndarray.base.html
"""

from __future__ import annotations

from typing import Any

import numpy as np


class NumpyMethods:
    """NumPy's methods of the same names (see the module docstring)."""

    __slots__ = ()

    def trace(self, offset: int = 0, axis1: int = 0, axis2: int = 1, dtype: Any = None,
              out: Any = None) -> Any:
        """`np.trace(x, ...)`: the sum along a diagonal (of each 2-D slice above 2-D)."""
        return np.trace(self, offset, axis1, axis2, dtype, out)  # type: ignore[call-overload]

    def repeat(self, repeats: Any, axis: int | None = None) -> Any:
        """`np.repeat(x, repeats, axis)`: each element repeated (the flattened array's when
        axis is None). A list of repeats is moved to the array's device."""
        if isinstance(repeats, list | tuple | np.ndarray):
            xp = self.__array_namespace__()  # type: ignore[attr-defined]
            device = self.device  # type: ignore[attr-defined]
            repeats = xp.asarray(repeats, dtype=xp.int64, device=device)
        return np.repeat(self, repeats, axis)  # type: ignore[call-overload]

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> Any:
        """`np.diagonal(x, offset, axis1, axis2)`: the diagonal, as a new array (NumPy's is a
        read-only view)."""
        return np.diagonal(self, offset, axis1, axis2)  # type: ignore[call-overload]

    def partition(self, kth: Any, axis: int = -1, kind: str = "introselect",
                  order: Any = None) -> None:
        """Partition in place, as NumPy's `x.partition(kth)`: the element at each `kth` is
        where a sort would put it, smaller ones before it and larger ones after."""
        if order is not None:
            raise ValueError("order= applies to structured arrays, which qdarray does not have")
        part = np.partition(self, kth, axis=axis, kind=kind)  # type: ignore[call-overload]
        self[...] = part  # type: ignore[index]

    def compress(self, condition: Any, axis: int | None = None, out: Any = None) -> Any:
        """`np.compress(condition, x, axis)`: the slices along `axis` (of the flattened array
        when None) where the 1-D `condition` is true; a shorter condition counts as false for
        the rest."""
        cond = np.asarray(condition, dtype=bool)
        if cond.ndim != 1:
            raise ValueError("condition must be a 1-d array")
        xp = self.__array_namespace__()  # type: ignore[attr-defined]
        a: Any = xp.reshape(self, (-1,)) if axis is None else self
        ax = 0 if axis is None else axis
        idx = np.flatnonzero(cond)
        n = a.shape[ax]
        if idx.size and idx[-1] >= n:
            raise IndexError(f"index {idx[-1]} is out of bounds for axis {ax} with size {n}")
        result = xp.take(a, xp.asarray(idx, device=a.device), axis=ax)
        if out is None:
            return result
        out[...] = result
        return out

    def put(self, indices: Any, values: Any, mode: str = "raise") -> None:
        """`np.put(x, indices, values, mode)`: set elements of the flattened array in place;
        `values` repeat when shorter than `indices`; a repeated index gets its last value;
        mode "raise" (out-of-range indices raise IndexError), "wrap" or "clip"."""
        n = self.size  # type: ignore[attr-defined]
        ind = np.asarray(indices).astype(np.int64).ravel()
        if mode == "raise":
            bad = ind[(ind < -n) | (ind >= n)]
            if bad.size:
                raise IndexError(f"index {bad[0]} is out of bounds for axis 0 with size {n}")
            ind = ind % max(n, 1)
        elif mode == "wrap":
            ind = ind % n if n else ind
        elif mode == "clip":
            ind = np.clip(ind, 0, n - 1)
        else:
            raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap'; got {mode!r}")
        if ind.size == 0:
            return
        _, first_from_end = np.unique(ind[::-1], return_index=True)
        keep = np.sort(ind.size - 1 - first_from_end)  # each index's last occurrence
        xp = self.__array_namespace__()  # type: ignore[attr-defined]
        v = _cycled(xp, self, values, ind.size)
        v = xp.take(v, xp.asarray(keep, device=v.device))
        FlatIter(self)[xp.asarray(ind[keep], device=v.device)] = v

    @property
    def flat(self) -> FlatIter:
        """A flat iterator, as NumPy's `x.flat`: `x.flat[k]` reads and `x.flat[k] = v` writes
        the flattened array (C order), `len(x.flat)`, iteration over the elements."""
        return FlatIter(self)

    @property
    def flags(self) -> Flags:
        """Memory layout: `x.flags.c_contiguous`, `f_contiguous`, `writeable`, `owndata`
        (also `x.flags["C_CONTIGUOUS"]`, as NumPy's)."""
        return Flags(self)

    @property
    def base(self) -> Any:
        """The Array this one is a view of, or None when it owns its memory (see the module
        docstring)."""
        return getattr(self, "_base", None)


def _cycled(xp: Any, like: Any, values: Any, n: int) -> Any:
    """`values` as a 1-D array of `like`'s dtype and device, of length `n`, repeated
    cyclically (NumPy's rule for `put` and `x.flat[...] = values`)."""
    v = xp.reshape(xp.asarray(values, dtype=like.dtype, device=like.device), (-1,))
    if v.shape[0] == n:
        return v
    if v.shape[0] == 0:
        raise ValueError("cannot assign an empty sequence to a non-empty selection")
    return xp.take(v, xp.asarray(np.arange(n) % v.shape[0], device=like.device))


class FlatIter:
    """NumPy's `x.flat` (see `NumpyMethods.flat`); `base` is the array."""

    __slots__ = ("base",)

    def __init__(self, base: Any) -> None:
        self.base = base

    def _flat(self) -> Any:
        """The flattened array: a view when the array is C-contiguous, else a copy."""
        return self.base.__array_namespace__().reshape(self.base, (-1,))

    def __len__(self) -> int:
        return self.base.size  # type: ignore[no-any-return]

    def __iter__(self) -> Any:
        flat = self._flat()
        for k in range(flat.shape[0]):
            yield flat[k]

    def __getitem__(self, key: Any) -> Any:
        return self._flat()[key]

    def __setitem__(self, key: Any, value: Any) -> None:
        base = self.base
        xp = base.__array_namespace__()
        flat = self._flat() if Flags(base).c_contiguous else xp.reshape(base, (-1,), copy=True)
        if not isinstance(value, int | float | complex | bool):
            count = len(np.arange(flat.shape[0])[_host_key(key)])
            value = _cycled(xp, base, value, count)
        flat[key] = value
        if not Flags(base).c_contiguous:
            base[...] = xp.reshape(flat, base.shape)

    def copy(self) -> Any:
        """A 1-D copy of the flattened array."""
        return self.base.__array_namespace__().reshape(self.base, (-1,), copy=True)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self._flat(), dtype=dtype)


def _host_key(key: Any) -> Any:
    """An index key with its arrays on the host (to count what it selects)."""
    if isinstance(key, tuple):
        return tuple(_host_key(k) for k in key)
    if hasattr(key, "__array_namespace__"):
        return np.asarray(key.to_device("cpu"))
    return key


class Flags:
    """NumPy's `x.flags`, for the keys NumPy users test (see `NumpyMethods.flags`)."""

    __slots__ = ("c_contiguous", "f_contiguous", "writeable", "owndata")

    _KEYS = {"C_CONTIGUOUS": "c_contiguous", "C": "c_contiguous", "CONTIGUOUS": "c_contiguous",
             "F_CONTIGUOUS": "f_contiguous", "F": "f_contiguous", "FORTRAN": "f_contiguous",
             "WRITEABLE": "writeable", "W": "writeable", "OWNDATA": "owndata", "O": "owndata"}

    def __init__(self, x: Any) -> None:
        shape, strides, size = x.shape, x.strides, x.itemsize
        self.c_contiguous = _contiguous(shape, strides, size, reversed(range(len(shape))))
        self.f_contiguous = _contiguous(shape, strides, size, range(len(shape)))
        flags = getattr(x._data, "flags", None)
        self.writeable = bool(getattr(flags, "writeable", True))
        self.owndata = x.base is None

    def __getitem__(self, key: str) -> bool:
        try:
            return getattr(self, self._KEYS[key.upper()])  # type: ignore[no-any-return]
        except KeyError:
            raise KeyError(f"Unknown flag {key!r}; qdarray reports "
                           "C_CONTIGUOUS, F_CONTIGUOUS, WRITEABLE, OWNDATA") from None

    def __repr__(self) -> str:
        return "\n".join(f"  {name.upper()} : {getattr(self, name)}" for name in self.__slots__)


def _contiguous(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int,
                axes: Any) -> bool:
    """Whether the axes, innermost first in `axes`, are laid out densely (NumPy's rule:
    axes of length 1 have any stride, an empty array is contiguous)."""
    if 0 in shape:
        return True
    expect = itemsize
    for k in axes:
        if shape[k] != 1 and strides[k] != expect:
            return False
        expect *= shape[k]
    return True
