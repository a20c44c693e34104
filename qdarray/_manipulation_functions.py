"""Manipulation functions of the standard: reshaping, joining, splitting and reordering arrays.

Functions that return views of their input (`reshape` when no copy is needed, `permute_dims`,
`expand_dims`, `squeeze`, `broadcast_to`, `broadcast_arrays`, `flip`, `moveaxis`, `unstack`)
pass the input's `Buffer` token on, so writes through the view count as writes of the base.
Views of an array with a gradient companion get the same view of the companion as theirs, so
a kernel (or a tape) given the view accumulates into the base's gradient. Broadcast views are
read-only (their elements alias each other) and have no companion: inside a `qd.ad.Tape` they
are recorded, and their gradient is summed back.
"""

from __future__ import annotations

import operator
from typing import Any

from . import _dtypes
from ._array import Array
from ._autodiff import TAPES, Scatter, defvjp, record
from ._axis import normalize_axes, normalize_axis
from ._creation_functions import arange
from ._devices import Device
from ._dispatch import require_array
from ._errors import AxisError, DeviceMismatchError


def _alias(x: Array, data: Any) -> Array:
    """A read-only view of `x` (a broadcast): shares x's buffer token. Inside a tape it is
    recorded as an operation of its own (its writes and kernels refused); outside one it gets
    the same broadcast of x's gradient companion, read-only, so that a kernel's reverse given
    it refuses it (`ad/launch.py`) instead of leaving x's gradient silently zero."""
    out = Array._new_view(data, x)
    g = x._grad
    if g is not None and not TAPES:
        gdata = x._device.backend.xp.broadcast_to(g._data, data.shape)
        out._grad = Array._new(gdata, g._device, g._buffer)
    return out


def _new(data: Any, device: Device) -> Array:
    return Array._new(device.backend.normalize(data), device)


def _int_tuple(shape: Any, func: str, name: str = "shape") -> tuple[int, ...]:
    if not isinstance(shape, (tuple, list)):
        shape = (shape,)
    out = []
    for s in shape:
        try:
            if type(s) is bool:
                raise TypeError
            out.append(operator.index(s))
        except TypeError:
            raise TypeError(
                f"{func} expects {name} as a tuple of integers; got {type(s).__name__} {s!r} "
                f"in {tuple(shape)!r}."
            ) from None
    return tuple(out)


def _arrays(arrays: Any, func: str) -> tuple[list[Array], Device]:
    if isinstance(arrays, Array) or not isinstance(arrays, (tuple, list)):
        raise TypeError(
            f"{func} expects a tuple or list of arrays; got {type(arrays).__name__}. "
            f"Use {func}([a, b, ...])."
        )
    if not arrays:
        raise ValueError(f"{func} needs at least one array; got an empty sequence.")
    arrays = [require_array(a, func, f"arrays[{i}]") for i, a in enumerate(arrays)]
    device = arrays[0]._device
    for i, a in enumerate(arrays):
        if a._device is not device:
            raise DeviceMismatchError(
                f"{func} got arrays on two devices: arrays[0] on {device} and arrays[{i}] on "
                f"{a._device}; move them with x.to_device('{device}') first."
            )
    return list(arrays), device


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The shape that `shapes` broadcast to.

    Raises:
        ValueError: naming the shapes that do not broadcast.

    Example::

        qd.broadcast_shapes((3, 1), (4,))   # (3, 4)
    """
    result: list[int] = []
    norm = [_int_tuple(s, "broadcast_shapes") for s in shapes]
    ndim = max((len(s) for s in norm), default=0)
    for axis in range(-ndim, 0):
        size = 1
        for s in norm:
            if -axis > len(s):
                continue
            n = s[axis]
            if n == 1:
                continue
            if size != 1 and n != size:
                raise ValueError(
                    f"Shapes {', '.join(str(t) for t in norm)} cannot be broadcast together: "
                    f"dimension {axis} has sizes {size} and {n}. Sizes must match or be 1."
                )
            size = n
        result.append(size)
    return tuple(result)


def broadcast_to(x: Array, /, shape: tuple[int, ...]) -> Array:
    """A read-only view of `x` broadcast to `shape`.

    Example::

        qd.broadcast_to(qd.asarray([1, 2]), (3, 2)).shape   # (3, 2)
    """
    x = require_array(x, "broadcast_to")
    shape = _int_tuple(shape, "broadcast_to")
    if len(shape) < x.ndim or any(
            n != 1 and n != m for n, m in zip(x.shape[::-1], shape[::-1], strict=False)):
        raise ValueError(
            f"Cannot broadcast an array of shape {x.shape} to shape {shape}; each dimension "
            "of x must equal the target's trailing dimension or be 1."
        )
    out = _alias(x, x._device.backend.xp.broadcast_to(x._data, shape))
    if TAPES:
        return record("broadcast_to", out, (x,))  # type: ignore[no-any-return]
    return out


def broadcast_arrays(*arrays: Array) -> tuple[Array, ...]:
    """`arrays` broadcast to their common shape (a tuple, as in 2025.12): read-only views of
    those that broadcast, and those already of that shape as they are (writable), as NumPy's
    `broadcast_arrays` returns them (SciPy's tanhsinh passes its results on to a function
    that writes into them)."""
    if not arrays:
        return ()
    items, device = _arrays(arrays, "broadcast_arrays")
    shape = broadcast_shapes(*(a.shape for a in items))
    xp = device.backend.xp
    outs = tuple(a if a.shape == shape else _alias(a, xp.broadcast_to(a._data, shape))
                 for a in items)
    if TAPES:
        return tuple(o if o is a else record("broadcast_to", o, (a,))
                     for o, a in zip(outs, items, strict=True))
    return outs


def concat(arrays: tuple[Array, ...] | list[Array], /, *, axis: int | None = 0) -> Array:
    """Join arrays along an existing axis (flattened first when `axis` is None).

    The result's dtype follows type promotion of the inputs' dtypes.

    Example::

        qd.concat([qd.zeros((2, 3)), qd.ones((1, 3))]).shape   # (3, 3)
    """
    items, device = _arrays(arrays, "concat")
    dtype = _dtypes.result_type(*(a._dtype for a in items))
    if axis is not None:
        ndim = items[0].ndim
        if ndim == 0:
            raise ValueError("concat cannot join 0-D arrays along an axis; use qd.stack.")
        axis = normalize_axis(axis, ndim, "concat")
        first = items[0].shape
        for i, a in enumerate(items):
            if a.ndim != ndim or any(n != m for ax, (n, m) in
                                     enumerate(zip(a.shape, first, strict=True)) if ax != axis):
                raise ValueError(
                    f"concat along axis {axis} needs equal shapes outside that axis; "
                    f"arrays[0] has shape {first} and arrays[{i}] has shape {a.shape}."
                )
    xp = device.backend.xp
    natives = [a._data if a._dtype is dtype else xp.astype(a._data, dtype._np) for a in items]
    out = _new(xp.concat(natives, axis=axis), device)
    if TAPES:
        sizes = [a.size if axis is None else a.shape[axis] for a in items]
        return record("concat", out, tuple(items), {"axis": axis, "sizes": sizes})  # type: ignore[no-any-return]
    return out


def stack(arrays: tuple[Array, ...] | list[Array], /, *, axis: int = 0) -> Array:
    """Join arrays of one shape along a new axis.

    Example::

        qd.stack([qd.zeros(3), qd.ones(3)], axis=1).shape   # (3, 2)
    """
    items, device = _arrays(arrays, "stack")
    first = items[0].shape
    for i, a in enumerate(items):
        if a.shape != first:
            raise ValueError(
                f"stack needs arrays of one shape; arrays[0] has shape {first} and "
                f"arrays[{i}] has shape {a.shape}."
            )
    axis = normalize_axis(axis, len(first) + 1, "stack")
    dtype = _dtypes.result_type(*(a._dtype for a in items))
    xp = device.backend.xp
    natives = [a._data if a._dtype is dtype else xp.astype(a._data, dtype._np) for a in items]
    out = _new(xp.stack(natives, axis=axis), device)
    if TAPES:
        return record("stack", out, tuple(items), {"axis": axis})  # type: ignore[no-any-return]
    return out


def unstack(x: Array, /, *, axis: int = 0) -> tuple[Array, ...]:
    """Views of `x` split along `axis` (the inverse of `stack`)."""
    x = require_array(x, "unstack")
    if x.ndim == 0:
        raise ValueError("unstack needs an array of at least 1 dimension; got a 0-D array.")
    axis = normalize_axis(axis, x.ndim, "unstack")
    moveaxis = x._device.backend.xp.moveaxis
    return tuple(x._view(_slice_of_moved, moveaxis, axis, i) for i in range(x.shape[axis]))


def _slice_of_moved(data: Any, moveaxis: Any, axis: int, i: int) -> Any:
    return moveaxis(data, axis, 0)[i, ...]


def expand_dims(x: Array, /, axis: int | tuple[int, ...] = 0) -> Array:
    """A view of `x` with size-1 axes inserted at `axis` (an int, or a tuple as in 2025.12).

    Raises:
        AxisError: (an IndexError) for positions outside [-M, M), M = x.ndim + len(axis).
    """
    x = require_array(x, "expand_dims")
    positions = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    m = x.ndim + len(positions)
    for a in positions:
        if type(a) is int and not -m <= a < m:
            raise AxisError(
                f"expand_dims axis={axis!r} is out of range: inserting {len(positions)} axes "
                f"into an array of {x.ndim} dimensions takes positions in [{-m}, {m})."
            )
    axes = normalize_axes(axis, m, "expand_dims")
    return x._view(x._device.backend.xp.expand_dims, axes)


def squeeze(x: Array, /, axis: int | tuple[int, ...]) -> Array:
    """A view of `x` without the given size-1 axes.

    Raises:
        ValueError: when one of the axes does not have size 1.
    """
    x = require_array(x, "squeeze")
    axes = normalize_axes(axis, x.ndim, "squeeze")
    for ax in axes:
        if x.shape[ax] != 1:
            raise ValueError(
                f"squeeze can only remove axes of size 1; axis {ax} of shape {x.shape} has "
                f"size {x.shape[ax]}."
            )
    return x._view(x._device.backend.xp.squeeze, axis=axes)


def permute_dims(x: Array, /, axes: tuple[int, ...]) -> Array:
    """A view of `x` with its axes reordered (negative axes count from the end)."""
    x = require_array(x, "permute_dims")
    perm = normalize_axes(tuple(axes) if isinstance(axes, (tuple, list)) else axes, x.ndim,
                          "permute_dims", "axes")
    if len(perm) != x.ndim:
        raise AxisError(
            f"permute_dims needs a permutation of all {x.ndim} axes; got axes={tuple(axes)}."
        )
    return x._view(x._device.backend.xp.permute_dims, perm)


def moveaxis(x: Array, source: int | tuple[int, ...], destination: int | tuple[int, ...],
             /) -> Array:
    """A view of `x` with axes `source` moved to positions `destination`."""
    x = require_array(x, "moveaxis")
    src = normalize_axes(source, x.ndim, "moveaxis", "source")
    dst = normalize_axes(destination, x.ndim, "moveaxis", "destination")
    if len(src) != len(dst):
        raise ValueError(
            f"moveaxis needs as many destinations as sources; got source={source!r} and "
            f"destination={destination!r}."
        )
    return x._view(x._device.backend.xp.moveaxis, src, dst)


def flip(x: Array, /, *, axis: int | tuple[int, ...] | None = None) -> Array:
    """A view of `x` with the order of elements reversed along `axis` (all axes when None)."""
    x = require_array(x, "flip")
    axes = tuple(range(x.ndim)) if axis is None else normalize_axes(axis, x.ndim, "flip")
    return x._view(x._device.backend.xp.flip, axis=axes)


def reshape(x: Array, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Array:
    """`x` with a new shape: a view when possible, a copy when `copy=True` or needed.

    Args:
        x: the input array.
        shape: the new shape; one entry may be -1 (inferred).
        copy: True always copies; False never copies (ValueError if it would have to);
            None copies only when the data cannot be viewed with the new shape.

    Example::

        qd.reshape(qd.zeros(6), (2, -1)).shape   # (2, 3)
    """
    x = require_array(x, "reshape")
    shape = _check_reshape(x, _int_tuple(shape, "reshape"))
    xp = x._device.backend.xp
    if copy is not True:
        try:
            return x._view(xp.reshape, shape, copy=False)
        except (ValueError, AttributeError):  # CuPy raises AttributeError where NumPy raises
            # ValueError: the strides admit no view with the new shape
            if copy is False:
                raise ValueError(
                    f"reshape(copy=False) cannot view an array of shape {x.shape} and strides "
                    f"{x.strides} with shape {shape} without copying; use copy=None or True."
                ) from None
    out = _new(xp.reshape(x._data, shape, copy=True), x._device)
    if TAPES:
        return record("reshape", out, (x,))  # type: ignore[no-any-return]
    return out


def _check_reshape(x: Array, shape: tuple[int, ...]) -> tuple[int, ...]:
    unknown = [i for i, s in enumerate(shape) if s == -1]
    if len(unknown) > 1 or any(s < -1 for s in shape):
        raise ValueError(
            f"reshape accepts non-negative sizes and at most one -1; got shape {shape}."
        )
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if unknown:
        if known == 0 or x.size % known:
            raise ValueError(
                f"Cannot reshape an array of size {x.size} (shape {x.shape}) into shape "
                f"{shape}: the -1 cannot be inferred."
            )
        shape = shape[:unknown[0]] + (x.size // known,) + shape[unknown[0] + 1:]
    elif known != x.size:
        raise ValueError(
            f"Cannot reshape an array of size {x.size} (shape {x.shape}) into shape {shape} "
            f"of size {known}; the sizes must match."
        )
    return shape


def roll(x: Array, /, shift: int | tuple[int, ...], *,
         axis: int | tuple[int, ...] | None = None) -> Array:
    """Elements of `x` shifted cyclically along `axis` (over the flattened array when None)."""
    x = require_array(x, "roll")
    xp = x._device.backend.xp
    if axis is None:
        if isinstance(shift, (tuple, list)):
            raise ValueError(f"roll with axis=None takes one integer shift; got {shift!r}.")
        out = _new(xp.roll(x._data, _int_tuple(shift, "roll", "shift")[0]), x._device)
        if TAPES:
            return record("roll", out, (x,), {"shift": -_int_tuple(shift, "roll")[0],  # type: ignore[no-any-return]
                                             "axis": None})
        return out
    axes = normalize_axes(axis, x.ndim, "roll")
    shifts = _int_tuple(shift, "roll", "shift")
    if isinstance(shift, (tuple, list)):
        if len(shifts) != len(axes):
            raise ValueError(
                f"roll needs one shift per axis; got shift={tuple(shift)} for axis={axis!r}."
            )
    else:
        shifts = shifts * len(axes)
    out = _new(xp.roll(x._data, shifts, axis=axes), x._device)
    if TAPES:
        return record("roll", out, (x,),  # type: ignore[no-any-return]
                      {"shift": tuple(-n for n in shifts), "axis": axes})
    return out


def repeat(x: Array, repeats: int | Array, /, *, axis: int | None = None) -> Array:
    """Each element of `x` repeated `repeats` times (per element when `repeats` is an array).

    Note: with an array of repeats the result's shape depends on the data, which waits for
    the device on GPUs.
    """
    x = require_array(x, "repeat")
    if axis is not None:
        axis = normalize_axis(axis, x.ndim, "repeat")
    n = x.size if axis is None else x.shape[axis]
    xp = x._device.backend.xp
    if type(repeats) is Array:
        if repeats._device is not x._device:
            raise DeviceMismatchError(
                f"repeat got x on {x._device} and repeats on {repeats._device}; move one "
                f"with .to_device('{x._device}') first."
            )
        if repeats._dtype.kind not in "iu":
            raise TypeError(f"Only integer dtypes are allowed in repeat's repeats; got "
                            f"{repeats._dtype}.")
        if repeats.ndim > 1 or (repeats.ndim == 1 and repeats.shape[0] not in (1, n)):
            raise ValueError(
                f"repeat needs repeats of shape (1,) or ({n},) here; got {repeats.shape}."
            )
        if repeats.size and int(xp.min(repeats._data)) < 0:
            raise ValueError(
                f"repeat needs non-negative repeats; got {int(xp.min(repeats._data))}."
            )
        reps: Any = repeats._data
    else:
        reps = _int_tuple(repeats, "repeat", "repeats")
        if len(reps) != 1:
            raise TypeError(f"repeat takes an int or an integer array; got {repeats!r}.")
        reps = reps[0]
        if reps < 0:
            raise ValueError(f"repeat needs non-negative repeats; got {reps}.")
        _check_result_size("repeat", x, reps)
    out = _new(xp.repeat(x._data, reps, axis=axis), x._device)
    if TAPES:
        return record("repeat", out, (x,), {"repeats": repeats, "axis": axis})  # type: ignore[no-any-return]
    return out


def _check_result_size(func: str, x: Array, reps: int) -> None:
    """A ValueError with the numbers when `x` repeated `reps` times has more bytes than an
    array can (NumPy's own check overflows first and reports negative dimensions)."""
    total = x.size * reps
    nbytes = total * x._dtype.itemsize
    if nbytes > _MAX_BYTES:
        raise ValueError(
            f"{func}'s result would have {x.size} x {reps} = {total} elements "
            f"of {x._dtype.itemsize} bytes ({nbytes} bytes), more than the largest array "
            f"({_MAX_BYTES} bytes). Use fewer repeats.")


_MAX_BYTES = 2**63 - 1  # the largest size NumPy (intp) and CuPy arrays can have, in bytes


def tile(x: Array, repetitions: tuple[int, ...], /) -> Array:
    """`x` repeated `repetitions[i]` times along each axis i (shapes aligned from the end)."""
    x = require_array(x, "tile")
    reps = _int_tuple(repetitions, "tile", "repetitions")
    if any(r < 0 for r in reps):
        raise ValueError(f"tile needs non-negative repetitions; got {reps}.")
    out = _new(x._device.backend.xp.tile(x._data, reps), x._device)
    if TAPES:
        return record("tile", out, (x,), {"reps": reps})  # type: ignore[no-any-return]
    return out


# -- vector-Jacobian products (qdarray/_autodiff.py) ------------------------------------------


def _piece(g: Array, index: int, axis: int | None, sizes: list[int], shape: tuple[int, ...]
           ) -> Array:
    start = sum(sizes[:index])
    stop = start + sizes[index]
    if axis is None:
        return reshape(g[start:stop], shape)
    return g[(slice(None),) * axis + (slice(start, stop),)]


def _tile_rule(g: Array, shape: tuple[int, ...], reps: tuple[int, ...]) -> Array:
    # g holds reps[i] copies of x along axis i: view it as (r0, s0, r1, s1, ...) and sum
    # the copies.
    d = max(len(shape), len(reps))
    sizes = (1,) * (d - len(shape)) + shape
    counts = (1,) * (d - len(reps)) + reps
    from ._statistical_functions import sum as total

    split = reshape(g, tuple(v for pair in zip(counts, sizes, strict=True) for v in pair))
    return reshape(total(split, axis=tuple(range(0, 2 * d, 2))), shape)


def _repeat_rule(g: Array, shape: tuple[int, ...], repeats: Any, axis: int | None) -> Any:
    n = 1
    for s in shape:
        n *= s
    length = n if axis is None else shape[axis]
    source = repeat(arange(length, dtype=_dtypes.int64, device=g.device), repeats)
    if axis is not None:
        return Scatter((slice(None),) * axis + (source,), g)
    return Scatter(_unravel(source, shape), g)


def _unravel(flat: Array, shape: tuple[int, ...]) -> tuple[Array, ...]:
    """Row-major multi-indices of positions `flat` in an array of `shape`."""
    out = []
    stride = 1
    for s in reversed(shape):
        out.append((flat // stride) % s)
        stride *= s
    return tuple(reversed(out))


def _unview(g: Array, fn: Any, shape: tuple[int, ...]) -> Array:
    """The cotangent of `x` from that of the view `fn(x)`: each element's position in x, read
    through the same view, and the view's cotangent added there (repeats accumulate)."""
    from ._indexing import add_at

    device = g._device
    xp = device.backend.xp
    n = 1
    for k in shape:
        n *= k
    positions = xp.reshape(arange(n, dtype=_dtypes.int64, device=device)._data, shape)
    where = Array._new(xp.reshape(fn(positions), (-1,)), device)
    flat = _zeros_flat(n, g)
    add_at(flat, where, Array._new(xp.reshape(g._data, (-1,)), device))
    out = Array._new(xp.reshape(flat._data, shape), device)
    if TAPES:  # an enclosing tape differentiates this reverse (nested tapes)
        return record("view's transpose", out, (g,), {"fn": fn})  # type: ignore[no-any-return]
    return out


def _view_again(g: Array, fn: Any) -> Array:
    """The transpose of `_unview`: the view itself (recorded, for nested tapes)."""
    out = Array._new(fn(g._data), g._device, g._buffer)
    if TAPES:
        return record("view", out, (g,), {"fn": fn})  # type: ignore[no-any-return]
    return out


def _zeros_flat(n: int, like: Array) -> Array:
    from ._creation_functions import zeros

    return zeros(n, dtype=like._dtype, device=like._device)


defvjp("broadcast_to", x=lambda g: g)
defvjp("view", x=_unview)
defvjp("view's transpose", g=_view_again)
defvjp("concat", each=lambda g, index, axis, sizes, shape: _piece(g, index, axis, sizes, shape))
defvjp("stack", each=lambda g, index, axis: g[(slice(None),) * axis + (index,)])
defvjp("reshape", x=lambda g, shape: reshape(g, shape))
defvjp("roll", x=lambda g, shift, axis: roll(g, shift, axis=axis))
defvjp("repeat", x=_repeat_rule)
defvjp("tile", x=_tile_rule)
