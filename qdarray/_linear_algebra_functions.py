"""Linear algebra functions of the main namespace: matmul, matrix_transpose, tensordot, vecdot.

The `linalg` extension re-exports these and adds the decompositions (qdarray/linalg).
"""

from __future__ import annotations

import operator
from typing import Any

from . import _dtypes
from ._array import Array
from ._autodiff import TAPES, defvjp, record
from ._axis import normalize_axis
from ._devices import Device
from ._dispatch import require_array, same_device
from ._elementwise_functions import conj
from ._manipulation_functions import expand_dims, permute_dims


def numeric_pair(x1: Any, x2: Any, func: str) -> Device:
    """Check two array arguments of a numeric function; their common device."""
    x1 = require_array(x1, func, "x1")
    x2 = require_array(x2, func, "x2")
    device = same_device(x1, x2, func)
    _dtypes.check_category(x1._dtype, "numeric", func)
    _dtypes.check_category(x2._dtype, "numeric", func)
    return device


def wrap(data: Any, device: Device) -> Array:
    """A backend result as a new Array on `device`."""
    return Array._new(device.backend.normalize(data), device)


def matmul(x1: Array, x2: Array, /) -> Array:
    """The matrix product of `x1` and `x2`, broadcast over leading (stack) dimensions.

    1-D operands act as vectors (a 1 is prepended to `x1`'s shape or appended to `x2`'s and
    removed from the result), as in NumPy.

    Raises:
        ValueError: for 0-D operands or mismatched contracted dimensions, naming the shapes.

    Example::

        qd.matmul(qd.ones((2, 3)), qd.ones((3, 4))).shape   # (2, 4)
    """
    device = numeric_pair(x1, x2, "matmul")
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError(
            f"matmul needs arrays of at least 1 dimension; got shapes {x1.shape} and "
            f"{x2.shape}. Use qd.multiply for scalars."
        )
    k1 = x1.shape[-1]
    k2 = x2.shape[0] if x2.ndim == 1 else x2.shape[-2]
    if k1 != k2:
        raise ValueError(
            f"matmul cannot multiply shapes {x1.shape} and {x2.shape}: the contracted "
            f"dimensions differ ({k1} vs {k2})."
        )
    out = wrap(device.backend.xp.matmul(x1._data, x2._data), device)
    if TAPES:
        return record("matmul", out, (x1, x2))  # type: ignore[no-any-return]
    return out


def matrix_transpose(x: Array, /) -> Array:
    """A view of `x` with its last two axes swapped (`x.mT`)."""
    x = require_array(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(
            f"matrix_transpose needs an array of at least 2 dimensions; got shape {x.shape}."
        )
    return x._view(x._device.backend.xp.matrix_transpose)


def tensordot(x1: Array, x2: Array, /, *,
              axes: int | tuple[Any, Any] = 2) -> Array:
    """Sum products over the last `axes` axes of `x1` and the first of `x2`, or over the
    axis pairs given as `(x1_axes, x2_axes)`.

    Example::

        qd.tensordot(qd.ones((2, 3)), qd.ones((3, 4)), axes=1).shape   # (2, 4)
    """
    device = numeric_pair(x1, x2, "tensordot")
    if isinstance(axes, (tuple, list)):
        if len(axes) != 2:
            raise ValueError(
                f"tensordot axes must be an int or a pair (x1_axes, x2_axes); got {axes!r}."
            )
        a1 = _axis_list(axes[0], x1.ndim, "x1")
        a2 = _axis_list(axes[1], x2.ndim, "x2")
        if len(a1) != len(a2):
            raise ValueError(
                f"tensordot needs as many axes of x1 as of x2; got {axes!r}."
            )
        # Tuples, as NumPy spells them: CuPy compares axes with ((), ()) for 0-d inputs, and
        # ([], []) raised "An input is zero-dim while axes has dimensions" there.
        native_axes: Any = (tuple(a1), tuple(a2))
    else:
        n = _nonnegative(axes)
        if n > x1.ndim or n > x2.ndim:
            raise ValueError(
                f"tensordot axes={n} exceeds the dimensions of shapes {x1.shape} and "
                f"{x2.shape}."
            )
        a1 = list(range(x1.ndim - n, x1.ndim))
        a2 = list(range(n))
        native_axes = n
    for i, j in zip(a1, a2, strict=True):
        if x1.shape[i] != x2.shape[j]:
            raise ValueError(
                f"tensordot cannot contract axis {i} of x1 (size {x1.shape[i]}, shape "
                f"{x1.shape}) with axis {j} of x2 (size {x2.shape[j]}, shape {x2.shape})."
            )
    out = wrap(device.backend.xp.tensordot(x1._data, x2._data, axes=native_axes), device)
    if TAPES:
        return record("tensordot", out, (x1, x2), {"a1": a1, "a2": a2})  # type: ignore[no-any-return]
    return out


def _nonnegative(axes: Any) -> int:
    try:
        n = operator.index(axes)
    except TypeError:
        raise TypeError(f"tensordot axes must be an int or a pair of sequences; got {axes!r}.")\
            from None
    if n < 0:
        raise ValueError(f"tensordot axes must be non-negative; got {n}.")
    return n


def _axis_list(axes: Any, ndim: int, name: str) -> list[int]:
    items = list(axes) if isinstance(axes, (tuple, list)) else [axes]
    return [normalize_axis(a, ndim, "tensordot", f"axes for {name}") for a in items]


def vecdot(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """Dot products of vectors along `axis`, broadcast over the other dimensions; complex
    `x1` is conjugated (sum of conj(x1) * x2).

    Example::

        qd.vecdot(qd.asarray([[1., 2.], [3., 4.]]), qd.asarray([1., 1.]))   # [3., 7.]
    """
    device = numeric_pair(x1, x2, "vecdot")
    ndim = max(x1.ndim, x2.ndim)
    if min(x1.ndim, x2.ndim) == 0:
        raise ValueError(
            f"vecdot needs arrays of at least 1 dimension; got shapes {x1.shape} and "
            f"{x2.shape}."
        )
    axis = normalize_axis(axis, ndim, "vecdot") - ndim
    if -axis > min(x1.ndim, x2.ndim) or x1.shape[axis] != x2.shape[axis]:
        raise ValueError(
            f"vecdot needs equal sizes along axis {axis}; got shapes {x1.shape} and "
            f"{x2.shape}."
        )
    xp = device.backend.xp
    out = wrap(xp.vecdot(x1._data, x2._data, axis=axis), device)
    if TAPES:
        return record("vecdot", out, (x1, x2), {"axis": axis})  # type: ignore[no-any-return]
    return out


# -- vector-Jacobian products (qdarray/_autodiff.py) ------------------------------------------
# Without conjugation (JAX's convention, see _elementwise_functions.py), except where the
# operation conjugates (vecdot's x1).


def _matmul_x1(g: Array, x2: Array, shape: tuple[int, ...]) -> Any:
    if x2.ndim == 1:
        return expand_dims(g, axis=-1) * x2
    if len(shape) == 1:
        return (expand_dims(g, axis=-2) @ matrix_transpose(x2))[..., 0, :]
    return g @ matrix_transpose(x2)


def _matmul_x2(g: Array, x1: Array, shape: tuple[int, ...]) -> Any:
    if x1.ndim == 1:
        if len(shape) == 1:
            return g * x1
        return expand_dims(x1, axis=-1) * expand_dims(g, axis=-2)
    if len(shape) == 1:
        return (matrix_transpose(x1) @ expand_dims(g, axis=-1))[..., 0]
    return matrix_transpose(x1) @ g


def _inverse(order: list[int]) -> tuple[int, ...]:
    return tuple(order.index(i) for i in range(len(order)))


def _tensordot_x1(g: Array, x2: Array, a1: list[int], a2: list[int], shape: tuple[int, ...]
                  ) -> Array:
    free1 = [i for i in range(len(shape)) if i not in a1]
    free2 = [j for j in range(x2.ndim) if j not in a2]
    moved = tensordot(g, x2, axes=(list(range(len(free1), len(free1) + len(free2))), free2))
    # moved's axes: x1's free axes, then x1's contracted ones in the order of x2's partners
    return permute_dims(moved, _inverse(free1 + [a1[a2.index(b)] for b in sorted(a2)]))


def _tensordot_x2(g: Array, x1: Array, a1: list[int], a2: list[int], shape: tuple[int, ...]
                  ) -> Array:
    free1 = [i for i in range(x1.ndim) if i not in a1]
    free2 = [j for j in range(len(shape)) if j not in a2]
    moved = tensordot(x1, g, axes=(free1, list(range(len(free1)))))
    return permute_dims(moved, _inverse([a2[a1.index(a)] for a in sorted(a1)] + free2))


def _vecdot_x1(g: Array, x2: Any, axis: int) -> Array:
    ct = expand_dims(g, axis=axis) * x2
    return conj(ct) if ct._dtype.kind == "c" else ct


def _vecdot_x2(g: Array, x1: Array, axis: int) -> Any:
    return expand_dims(g, axis=axis) * (conj(x1) if x1._dtype.kind == "c" else x1)


defvjp("matmul", x1=_matmul_x1, x2=_matmul_x2)
defvjp("tensordot", x1=_tensordot_x1, x2=_tensordot_x2)
defvjp("vecdot", x1=_vecdot_x1, x2=_vecdot_x2)
