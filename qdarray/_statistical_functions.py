"""Statistical functions of the standard: reductions (`sum`, `mean`, `max`, ...) and scans.

Accumulation dtypes follow the standard and NumPy: `sum`, `prod` and the cumulative functions
keep a floating or complex dtype and accumulate signed integers (and booleans) in int64 and
unsigned integers in uint64, unless `dtype=` says otherwise. `mean`, `var` and `std` of
integer or boolean arrays give float64, as in NumPy; `var` and `std` of complex arrays are
real. Empty reductions: `sum` is 0, `prod` is 1, `mean`/`var`/`std` are NaN (with NumPy's
RuntimeWarning on the CPU), and `max`/`min` raise ValueError, since they have no identity.
"""

from __future__ import annotations

import builtins
from typing import Any

from . import _dtypes
from ._array import Array
from ._autodiff import TAPES, defvjp, record
from ._axis import normalize_axes, normalize_axis
from ._data_type_functions import astype
from ._dispatch import category_error, require_array, wrap
from ._dtypes import DType
from ._elementwise_functions import conj, isnan
from ._manipulation_functions import flip, permute_dims, reshape
from ._searching_functions import where


def _acc_dtype(dtype: Any, x: Array, func: str) -> Any:
    """The native `dtype=` argument: None, or a supported DType's NumPy dtype."""
    if dtype is None:
        return None
    d = _dtypes.normalize_dtype(dtype)
    assert d is not None
    device = x._device
    if not device.backend.supports_dtype(d._np, device):
        raise TypeError(
            f"{func} cannot accumulate in {d} on device {device}, which does not support it; "
            "use a dtype the device supports, such as qd.float32."
        )
    return d._np


def _reduce(func: str, x: Array, axis: Any, keepdims: bool, **kwargs: Any) -> Array:
    # Every dtype is numeric or boolean, so sum, prod, mean, var and std check no category.
    if type(x) is not Array:
        x = require_array(x, func)
    axes = None if axis is None else normalize_axes(axis, x._data.ndim, func)
    device = x._device
    result = getattr(device.backend.xp, func)(x._data, axis=axes, keepdims=keepdims, **kwargs)
    out = wrap(result, device)
    if TAPES:
        return record(func, out, (x,),  # type: ignore[no-any-return]
                      {"axis": axes, "keepdims": keepdims, "correction": kwargs.get("correction")})
    return out


def sum(x: Array, /, *, axis: int | tuple[int, ...] | None = None,  # noqa: A001
        dtype: DType | None = None, keepdims: bool = False) -> Array:
    """The sum of the elements over `axis` (all axes when None).

    Args:
        x: input array (numeric or boolean dtypes; booleans count as 0 and 1).
        axis: an axis or tuple of axes to reduce; None reduces all.
        dtype: the accumulation and result dtype; by default float and complex dtypes are
            kept, signed integers and booleans accumulate in int64, unsigned in uint64.
        keepdims: keep reduced axes as length-1 dimensions.

    Returns:
        the sums; 0 for an empty reduction.

    Example::

        qd.sum(qd.asarray([[1, 2], [3, 4]]), axis=0)   # [4, 6]
    """
    return _reduce("sum", x, axis, keepdims, dtype=_acc_dtype(dtype, x, "sum"))


def prod(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
         dtype: DType | None = None, keepdims: bool = False) -> Array:
    """The product of the elements over `axis` (all axes when None).

    Args:
        x: input array (numeric or boolean dtypes).
        axis: an axis or tuple of axes to reduce; None reduces all.
        dtype: the accumulation and result dtype; defaults as for `sum`.
        keepdims: keep reduced axes as length-1 dimensions.

    Returns:
        the products; 1 for an empty reduction.
    """
    return _reduce("prod", x, axis, keepdims, dtype=_acc_dtype(dtype, x, "prod"))


def _extremum(func: str, x: Array, axis: Any, keepdims: bool) -> Array:
    if type(x) is not Array:
        x = require_array(x, func)
    if x._dtype.kind == "c":
        raise category_error(func, "real-valued", x._dtype)
    data = x._data
    if axis is None:
        axes = None
        empty = data.size == 0
    else:
        axes = normalize_axes(axis, data.ndim, func)
        empty = builtins.min(data.shape[a] for a in axes) == 0 if axes else False
    if empty:
        where = "the array" if axes is None else f"axis {axes if len(axes) > 1 else axes[0]}"
        raise ValueError(
            f"{func} of an empty selection: {where} of shape {x.shape} has no elements, and "
            f"{func} has no identity value. Try checking x.shape before reducing."
        )
    device = x._device
    out = wrap(getattr(device.backend.xp, func)(data, axis=axes, keepdims=keepdims), device)
    if TAPES:
        return record(func, out, (x,), {"axis": axes, "keepdims": keepdims})  # type: ignore[no-any-return]
    return out


def max(x: Array, /, *, axis: int | tuple[int, ...] | None = None,  # noqa: A001
        keepdims: bool = False) -> Array:
    """The largest element over `axis`; NaN if any reduced element is NaN.

    Args:
        x: input array (real-valued dtypes, including bool).
        axis: an axis or tuple of axes to reduce; None reduces all.
        keepdims: keep reduced axes as length-1 dimensions.

    Returns:
        the maxima, in `x`'s dtype.

    Raises:
        ValueError: when a reduced axis has length 0 (there is no identity for max).
        TypeError: for complex input, which is not ordered.
    """
    return _extremum("max", x, axis, keepdims)


def min(x: Array, /, *, axis: int | tuple[int, ...] | None = None,  # noqa: A001
        keepdims: bool = False) -> Array:
    """The smallest element over `axis`; NaN if any reduced element is NaN.

    Args:
        x: input array (real-valued dtypes, including bool).
        axis: an axis or tuple of axes to reduce; None reduces all.
        keepdims: keep reduced axes as length-1 dimensions.

    Returns:
        the minima, in `x`'s dtype.

    Raises:
        ValueError: when a reduced axis has length 0 (there is no identity for min).
        TypeError: for complex input, which is not ordered.
    """
    return _extremum("min", x, axis, keepdims)


def mean(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
         keepdims: bool = False) -> Array:
    """The arithmetic mean over `axis`.

    Args:
        x: input array (numeric or boolean dtypes).
        axis: an axis or tuple of axes to reduce; None reduces all.
        keepdims: keep reduced axes as length-1 dimensions.

    Returns:
        the means: `x`'s dtype for floating and complex input, float64 for integers and
        booleans (as in NumPy); NaN for an empty reduction.
    """
    return _reduce("mean", x, axis, keepdims)


def _correction(correction: Any, func: str) -> float | int:
    if type(correction) not in (int, float):
        raise TypeError(
            f"{func} expects a real number for correction (0 for the population, 1 for the "
            f"sample estimate); got {type(correction).__name__} {correction!r}."
        )
    return correction  # type: ignore[no-any-return]


def var(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        correction: int | float = 0.0, keepdims: bool = False) -> Array:
    """The variance over `axis`: sum(|x - mean|**2) / (N - correction).

    Args:
        x: input array (numeric or boolean dtypes).
        axis: an axis or tuple of axes to reduce; None reduces all.
        correction: degrees of freedom removed from N (1 gives the unbiased sample
            variance; NumPy calls it ddof).
        keepdims: keep reduced axes as length-1 dimensions.

    Returns:
        the variances, in the real dtype of `x`'s precision (float64 for integers).
    """
    return _reduce("var", x, axis, keepdims, correction=_correction(correction, "var"))


def std(x: Array, /, *, axis: int | tuple[int, ...] | None = None,
        correction: int | float = 0.0, keepdims: bool = False) -> Array:
    """The standard deviation over `axis`: the square root of `var`.

    Args:
        x: input array (numeric or boolean dtypes).
        axis: an axis or tuple of axes to reduce; None reduces all.
        correction: degrees of freedom removed from N (see `var`).
        keepdims: keep reduced axes as length-1 dimensions.

    Returns:
        the standard deviations, in the real dtype of `x`'s precision.
    """
    return _reduce("std", x, axis, keepdims, correction=_correction(correction, "std"))


def _scan(func: str, x: Array, axis: Any, dtype: Any, include_initial: Any) -> Array:
    if type(x) is not Array:
        x = require_array(x, func)
    if type(include_initial) is not bool:
        raise TypeError(
            f"{func} expects a bool for include_initial; got {type(include_initial).__name__}."
        )
    data = x._data
    device = x._device
    xp = device.backend.xp
    ndim = data.ndim
    if ndim == 0:
        # Note: the standard asks for at least one dimension; NumPy scans a 0-d array as 1-d.
        data = xp.reshape(data, (1,))
        ndim = 1
    if axis is None:
        if ndim > 1:
            raise ValueError(
                f"{func} of an array of shape {x.shape} needs axis=; use axis=0 ... "
                f"axis={ndim - 1}, or flatten with qd.reshape(x, (-1,)) first."
            )
        axis = 0
    else:
        axis = normalize_axis(axis, ndim, func)
    acc = None if dtype is None else _acc_dtype(dtype, x, func)
    result = getattr(xp, func)(data, axis=axis, dtype=acc, include_initial=include_initial)
    out = wrap(result, device)
    if TAPES:
        return record(func, out, (x,),  # type: ignore[no-any-return]
                      {"axis": axis, "include_initial": include_initial})
    return out


def cumulative_sum(x: Array, /, *, axis: int | None = None, dtype: DType | None = None,
                   include_initial: bool = False) -> Array:
    """Running sums along `axis`.

    Args:
        x: input array (numeric or boolean dtypes).
        axis: the axis to scan; may be None only for 0-d and 1-d input.
        dtype: the accumulation and result dtype; defaults as for `sum`.
        include_initial: start with the empty sum (0), making the axis one longer.

    Returns:
        an array of `x`'s shape (the axis one longer with include_initial).

    Example::

        qd.cumulative_sum(qd.asarray([1, 2, 3]))   # [1, 3, 6]
    """
    return _scan("cumulative_sum", x, axis, dtype, include_initial)


def cumulative_prod(x: Array, /, *, axis: int | None = None, dtype: DType | None = None,
                    include_initial: bool = False) -> Array:
    """Running products along `axis`.

    Args:
        x: input array (numeric or boolean dtypes).
        axis: the axis to scan; may be None only for 0-d and 1-d input.
        dtype: the accumulation and result dtype; defaults as for `prod`.
        include_initial: start with the empty product (1), making the axis one longer.

    Returns:
        an array of `x`'s shape (the axis one longer with include_initial).
    """
    return _scan("cumulative_prod", x, axis, dtype, include_initial)



# -- vector-Jacobian products (qdarray/_autodiff.py) ------------------------------------------


def _kept(g: Array, shape: tuple[int, ...], axis: tuple[int, ...] | None) -> Array:
    """A reduction's cotangent with the reduced axes back as length 1 (the tape broadcasts
    it to the input's shape)."""
    axes = range(len(shape)) if axis is None else axis
    return reshape(g, tuple(1 if i in axes else n for i, n in enumerate(shape)))


def _count(shape: tuple[int, ...], axis: tuple[int, ...] | None) -> int:
    n = 1
    for i, size in enumerate(shape):
        if axis is None or i in axis:
            n *= size
    return n


def _centered(x: Array, axis: tuple[int, ...] | None) -> Array:
    d = x - mean(x, axis=axis, keepdims=True)
    return conj(d) if x._dtype.kind == "c" else d


def _extremum_rule(g: Array, x: Array, out: Array, shape: tuple[int, ...],
                   axis: tuple[int, ...] | None) -> Any:
    # Ties share the gradient equally, as in JAX: g / (number of elements equal to the result).
    # A NaN result equals nothing: its NaN inputs get NaN, so the gradient says so (JAX's
    # 0 / 0 makes the whole slice NaN), the other inputs 0, as they had no effect.
    hit = x == _kept(out, shape, axis)
    counts = astype(sum(hit, axis=axis, keepdims=True), g._dtype)
    grad = where(hit, _kept(g, shape, axis) / counts, 0.0)
    return where(isnan(x), float("nan"), grad) if x._dtype.kind == "f" else grad


def _prod_rule(g: Array, x: Array, shape: tuple[int, ...], axis: tuple[int, ...] | None
               ) -> Any:
    # The product of all the other elements, from running products on both sides (exact with
    # zeros, unlike out / x).
    axes = tuple(range(len(shape))) if axis is None else axis
    rest = tuple(i for i in range(len(shape)) if i not in axes)
    order = rest + axes
    moved = permute_dims(x, order)
    lead = moved.shape[:len(rest)]
    flat = reshape(moved, lead + (-1,))
    left = cumulative_prod(flat, axis=-1, include_initial=True)[..., :-1]
    right = flip(cumulative_prod(flip(flat, axis=-1), axis=-1, include_initial=True)[..., :-1],
                 axis=-1)
    others = reshape(left * right, moved.shape)
    inverse = tuple(order.index(i) for i in range(len(shape)))
    return permute_dims(others, inverse) * _kept(g, shape, axis)


def _scan_rule(g: Array, axis: int, include_initial: bool) -> Array:
    if include_initial:
        g = g[(slice(None),) * axis + (slice(1, None),)]
    return flip(cumulative_sum(flip(g, axis=axis), axis=axis), axis=axis)


def _cumprod_rule(g: Array, x: Array, out: Array, axis: int, include_initial: bool) -> Any:
    # x'[k] = out[k - 1] * r[k], r[k] = sum over i >= k of g[i] * x[k + 1] ... x[i]: with no
    # zero in x, the reversed running sum of g * out over x; else r's recurrence
    # r[k] = g[k] + x[k + 1] r[k + 1], one step per element (exact with zeros).
    from ._creation_functions import ones_like
    from ._manipulation_functions import concat, stack
    from ._utility_functions import any as any_

    def at(k: Any) -> tuple[Any, ...]:
        return (slice(None),) * axis + (k,)

    if include_initial:
        g, out = g[at(slice(1, None))], out[at(slice(1, None))]
    if not builtins.bool(any_(x == 0)):
        return _scan_rule(g * out, axis, False) / x
    n = x.shape[axis]
    r = [g[at(n - 1)]]
    for k in range(n - 2, -1, -1):
        r.append(g[at(k)] + x[at(k + 1)] * r[-1])
    before = concat([ones_like(x[at(slice(0, 1))]), out[at(slice(0, n - 1))]], axis=axis)
    return stack(r[::-1], axis=axis) * before


defvjp("sum", x=lambda g, shape, axis: _kept(g, shape, axis))
defvjp("mean", x=lambda g, shape, axis: _kept(g, shape, axis) / _count(shape, axis))
defvjp("prod", x=_prod_rule)
defvjp("max", x=_extremum_rule)
defvjp("min", x=_extremum_rule)
defvjp("var", x=lambda g, x, shape, axis, correction: _kept(g, shape, axis) * _centered(x, axis)
       * (2.0 / (_count(shape, axis) - correction)))
defvjp("std", x=lambda g, x, out, shape, axis, correction: _kept(g / out, shape, axis)
       * _centered(x, axis) * (1.0 / (_count(shape, axis) - correction)))
defvjp("cumulative_sum", x=_scan_rule)
defvjp("cumulative_prod", x=_cumprod_rule)
